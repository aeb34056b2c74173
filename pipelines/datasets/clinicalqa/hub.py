"""Fetching ClinicalQA from the Hugging Face Hub: list the repository at the pinned revision and
download ``data/<split>-*.parquet`` into huggingface_hub's cache.

``HF_ENDPOINT`` is read at call time (a mirror, or a test server standing in for the hub);
transient failures (5xx, 429, 408, connection errors) are retried with backoff, since
huggingface_hub itself retries only some of them. Any other failure names the local alternative
(``MEDBENCH_CLINICALQA_SOURCE``).
"""

from __future__ import annotations

import fnmatch
import os
import time
from pathlib import Path
from typing import Any, Callable

from pipelines.datasets.clinicalqa.common import CLINICALQA_SOURCE_ENV, ClinicalqaDataError, ClinicalqaDownloadError
from pipelines.engine.retry import Again, Backoff, retry_on_exception
from medbench.specs import DatasetSpec

_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})

Log = Callable[[str], None]


def download_split(spec: DatasetSpec, cache_dir: Path | None, log: Log) -> list[Path]:
    """The split's Parquet files of the dataset at its pinned revision, in huggingface_hub's cache."""
    from huggingface_hub import HfApi, hf_hub_download

    src = spec.source
    if src.kind != "huggingface":
        raise ClinicalqaDataError(f"dataset {spec.slug}: source kind {src.kind!r} is not huggingface")
    endpoint = os.environ.get("HF_ENDPOINT") or None
    api = HfApi(endpoint=endpoint)
    where = f"{src.location}@{src.revision}" + (f" via {endpoint}" if endpoint else "")
    log(f"clinicalqa: listing {where}")
    try:
        files = _with_retries(
            f"listing {where}",
            lambda: api.list_repo_files(src.location, repo_type="dataset", revision=src.revision),
            log,
        )
        wanted = sorted(f for f in files if fnmatch.fnmatch(f, f"data/{src.split}-*.parquet"))
        if not wanted:
            raise ClinicalqaDataError(
                f"{where}: no data/{src.split}-*.parquet file; the repository has {sorted(files)}"
            )
        paths: list[Path] = []
        for filename in wanted:
            log(f"clinicalqa: downloading {filename} from {where}")
            local = _with_retries(
                f"downloading {filename}",
                lambda filename=filename: hf_hub_download(
                    src.location,
                    filename,
                    repo_type="dataset",
                    revision=src.revision,
                    cache_dir=str(cache_dir) if cache_dir is not None else None,
                    endpoint=endpoint,
                ),
                log,
            )
            paths.append(Path(local))
    except ClinicalqaDataError:
        raise
    except Exception as exc:  # noqa: BLE001 - every hub failure gets the same advice
        raise ClinicalqaDownloadError(
            f"could not fetch {where}: {type(exc).__name__}: {_first_line(exc)}. To use a local copy instead, set "
            f"{CLINICALQA_SOURCE_ENV} to a .parquet or .jsonl file in the dataset's schema."
        ) from exc
    return paths


def _with_retries(what: str, call: Callable[[], Any], log: Log, attempts: int = 4, first_wait_s: float = 1.0) -> Any:
    def on_retry(failure: Again, n: int, wait: float) -> None:
        exc = failure.error
        log(f"clinicalqa: {what} failed ({type(exc).__name__}: {_first_line(exc)}); retry {n} in {wait:.0f}s")

    return retry_on_exception(call, _is_transient, attempts, Backoff(first_wait_s), on_retry, sleep=time.sleep)


def _is_transient(exc: BaseException) -> bool:
    """A 5xx/429/408 answer or a network failure anywhere in the exception's chain."""
    import httpx2  # huggingface_hub's HTTP client
    from huggingface_hub.errors import HfHubHTTPError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, HfHubHTTPError):
            response = getattr(current, "response", None)
            if response is not None and response.status_code in _RETRY_STATUS:
                return True
        if isinstance(current, httpx2.TransportError):
            return True
        current = current.__cause__ or current.__context__
    return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
