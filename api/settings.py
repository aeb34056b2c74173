"""Service settings, read once when the app is created.

The API reads only two things from the environment: where the data directory is
(``MEDBENCH_DATA``, resolved by ``medbench.layout``) and the public base URL used in ``url`` and
``predictions_url`` (``MEDBENCH_PUBLIC_URL``). Explicit arguments win over the environment so that
tests and ``medbench demo`` can run several differently configured apps in one process.

Its file name is shared on purpose: the service's own module of that name (the pipeline's serves
another side).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from medbench.layout import DataDir

PUBLIC_URL_ENV = "MEDBENCH_PUBLIC_URL"


@dataclass(frozen=True)
class Settings:
    data: DataDir
    public_url: str | None  # without a trailing slash; None = the origin each request came to
    reuse_flush_s: float = 1.0  # how often counted reuses are written to the state store
    pointer_poll_s: float = 0.25  # how often the warehouse pointer is re-read (at most)
    response_cache_entries: int = 4096  # encoded bodies kept per warehouse version


def load_settings(
    data_dir: Path | str | None = None,
    public_url: str | None = None,
    reuse_flush_s: float = 1.0,
) -> Settings:
    url = public_url if public_url is not None else os.environ.get(PUBLIC_URL_ENV)
    url = url.strip().rstrip("/") if url else None
    if reuse_flush_s <= 0:
        raise ValueError(f"reuse_flush_s must be positive, got {reuse_flush_s}")
    return Settings(data=DataDir(data_dir), public_url=url or None, reuse_flush_s=reuse_flush_s)
