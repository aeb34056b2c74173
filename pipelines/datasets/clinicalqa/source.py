"""The real ClinicalQA loader: Hugging Face (or a local file in the same schema) to a snapshot.

Every clinicalqa score names the exact rows it was computed on, so the loader turns whatever it
read into one canonical table, validates it, and names it by a hash of its content: the same rows
give the same snapshot id whether they came from the Hub, from a Parquet mirror or from a JSONL
file. Validation errors name the row (1-based position and question_id) and the field, because a
broken row found later, in a score, would be far harder to trace.

The Hub path is the real one (``hub.py``: ``huggingface_hub`` lists the repository at the pinned
revision and downloads ``data/<split>-*.parquet`` into its cache, retrying transient failures); a
commit-pinned download is made once per data directory.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.datasets.clinicalqa.common import (  # noqa: F401 (the loader's errors, named from here too)
    CLINICALQA_SOURCE_ENV, ClinicalqaDataError, ClinicalqaDownloadError,
)
from pipelines.datasets.clinicalqa.hub import download_split
from medbench.specs import DatasetSpec
from medbench.files import atomic_path, atomic_write_bytes

ANSWER_LETTERS: tuple[str, ...] = ("A", "B", "C", "D", "E")  # the dataset's answer column holds one of these

OPTION_KEYS: tuple[str, ...] = tuple(f"option_{letter}" for letter in ANSWER_LETTERS)
TEXT_FIELDS: tuple[str, ...] = (
    "chief_complaint",
    "purpose",
    "question",
    "exam",
    "answer",
    "explanation",
    "source",
    "category",
)
REQUIRED_TEXT: frozenset[str] = frozenset({"question", "answer"})
COLUMNS: tuple[str, ...] = (
    "question_id",
    "chief_complaint",
    "purpose",
    "question",
    "exam",
    "options",
    "answer",
    "explanation",
    "source",
    "category",
)
SCHEMA = pa.schema(
    [
        ("question_id", pa.int64()),
        ("chief_complaint", pa.string()),
        ("purpose", pa.string()),
        ("question", pa.string()),
        ("exam", pa.string()),
        ("options", pa.struct([(key, pa.string()) for key in OPTION_KEYS])),
        ("answer", pa.string()),
        ("explanation", pa.string()),
        ("source", pa.string()),
        ("category", pa.string()),
    ]
)
MAX_REPORTED_ERRORS = 20
_COMMIT_LIKE = re.compile(r"[0-9a-f]{7,40}")

Log = Callable[[str], None]


@dataclass(frozen=True)
class ClinicalqaSnapshot:
    snapshot_id: str
    path: Path
    n_rows: int


@dataclass(frozen=True)
class _SourceRow:
    where: str  # "row 7" / "row 7 (line 8)": the row's place in the source, 1-based
    data: Any


# --------------------------------------------------------------------------- public API


def load_clinicalqa_snapshot(
    spec: DatasetSpec,
    expected_rows: int,
    out_dir: Path,
    source: str | None = None,
    cache_dir: Path | None = None,
    log: Log = print,
) -> ClinicalqaSnapshot:
    """Read, validate and write the ClinicalQA snapshot ``out_dir/<snapshot_id>.parquet``.

    ``source`` names a local ``.parquet`` or ``.jsonl`` file (or a folder laid out like the Hub
    repository, with ``data/<split>-*.parquet``); without it the dataset is downloaded from the
    Hub at ``spec.source.revision`` into ``cache_dir`` (huggingface_hub's cache when None).
    """
    out_dir = Path(out_dir)
    if source:
        rows = _read_local(Path(source), spec.source.split, log)
    else:
        reused = _reuse_pinned_download(spec, out_dir, expected_rows, log)
        if reused is not None:
            return reused

        rows = _parquet_rows(download_split(spec, cache_dir, log))
    table_rows = _normalise_rows(rows, expected_rows)
    snapshot = _write_snapshot(table_rows, out_dir)
    if not source:
        _remember_pinned_download(spec, out_dir, snapshot)
    log(f"clinicalqa: snapshot {snapshot.snapshot_id} ({snapshot.n_rows} rows) at {snapshot.path}")
    return snapshot


def read_clinicalqa_snapshot(path: Path) -> list[dict[str, Any]]:
    """The snapshot's rows (sorted by question_id), ``options`` as a dict of option_A..option_E."""
    return pq.read_table(Path(path), schema=SCHEMA).to_pylist()


def snapshot_id_of(rows: list[dict[str, Any]]) -> str:
    """First 16 hex of sha256 of the canonical JSON of the rows sorted by question_id."""
    ordered = sorted(rows, key=lambda r: r["question_id"])
    payload = json.dumps(ordered, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def _normalise_rows(rows: Iterable[_SourceRow], expected_rows: int) -> list[dict[str, Any]]:
    """Canonical rows sorted by question_id; every problem found is reported at once."""
    errors: list[str] = []
    out: list[dict[str, Any]] = []
    first_seen: dict[int, str] = {}
    count = 0
    for row in rows:
        count += 1
        canonical = _normalise_row(row, errors)
        if canonical is None:
            continue
        qid = canonical["question_id"]
        if qid in first_seen:
            errors.append(f"{row.where} (question_id {qid}): duplicate question_id, first seen at {first_seen[qid]}")
            continue
        first_seen[qid] = row.where
        out.append(canonical)
    if count != expected_rows:
        errors.insert(0, f"expected {expected_rows} rows (the task spec's n_items), found {count}")
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        more = f"\n  ... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
        raise ClinicalqaDataError(
            f"ClinicalQA source is invalid ({len(errors)} problem(s)):\n  " + "\n  ".join(shown) + more
        )
    return sorted(out, key=lambda r: r["question_id"])


# --------------------------------------------------------------------------- validation


def _normalise_row(row: _SourceRow, errors: list[str]) -> dict[str, Any] | None:
    data = row.data
    if not isinstance(data, dict):
        errors.append(f"{row.where}: expected an object with the ClinicalQA fields, got {type(data).__name__}")
        return None
    qid = data.get("question_id")
    label = f"{row.where} (question_id {qid})" if isinstance(qid, int) and not isinstance(qid, bool) else row.where
    before = len(errors)
    if "question_id" not in data:
        errors.append(f"{label}: field `question_id` is missing")
    elif not isinstance(qid, int) or isinstance(qid, bool):
        errors.append(f"{label}: field `question_id` must be an integer, got {qid!r}")
    out: dict[str, Any] = {"question_id": qid}
    for field in TEXT_FIELDS:
        if field not in data:
            errors.append(f"{label}: field `{field}` is missing")
            continue
        value = data[field]
        if value is None and field not in REQUIRED_TEXT:
            value = ""
        if not isinstance(value, str):
            errors.append(f"{label}: field `{field}` must be a string, got {value!r}")
            continue
        out[field] = value
    question = out.get("question")
    if isinstance(question, str) and not question.strip():
        errors.append(f"{label}: field `question` is empty")
    answer = out.get("answer")
    if isinstance(answer, str):
        out["answer"] = answer.strip()
        if out["answer"] not in ANSWER_LETTERS:
            errors.append(f"{label}: field `answer` is {answer!r}, expected one of {', '.join(ANSWER_LETTERS)}")
    out["options"] = _normalise_options(data.get("options"), "options" in data, label, errors)
    if len(errors) > before:
        return None
    return {column: out[column] for column in COLUMNS}


def _normalise_options(options: Any, present: bool, label: str, errors: list[str]) -> dict[str, str] | None:
    if not present:
        errors.append(f"{label}: field `options` is missing")
        return None
    if not isinstance(options, dict):
        errors.append(f"{label}: field `options` must be an object with {', '.join(OPTION_KEYS)}, got {options!r}")
        return None
    out: dict[str, str] = {}
    for key in OPTION_KEYS:
        value = options.get(key)
        if key not in options:
            errors.append(f"{label}: field `options.{key}` is missing")
        elif not isinstance(value, str):
            errors.append(f"{label}: field `options.{key}` must be a string, got {value!r}")
        elif not value.strip():
            errors.append(f"{label}: field `options.{key}` is empty")
        else:
            out[key] = value
    extra = sorted(set(options) - set(OPTION_KEYS))
    if extra:
        errors.append(f"{label}: field `options` has unexpected keys {extra} (five options A-E expected)")
    return out


# --------------------------------------------------------------------------- local files


def _read_local(path: Path, split: str, log: Log) -> list[_SourceRow]:
    if path.is_dir():
        files = sorted(path.glob(f"data/{split}-*.parquet"))
        if not files:
            raise ClinicalqaDataError(f"{path}: folder has no data/{split}-*.parquet files (a Hub repository layout)")
        log(f"clinicalqa: reading {len(files)} Parquet file(s) from {path}")
        return _parquet_rows(files)
    if not path.is_file():
        raise ClinicalqaDataError(
            f"{path}: no such file ({CLINICALQA_SOURCE_ENV} must name a .parquet or .jsonl file)"
        )
    suffix = path.suffix.lower()
    log(f"clinicalqa: reading local file {path}")
    if suffix == ".parquet":
        return _parquet_rows([path])
    if suffix == ".jsonl":
        return _jsonl_rows(path)
    raise ClinicalqaDataError(f"{path}: unsupported file type {suffix!r}; expected .parquet or .jsonl")


def _jsonl_rows(path: Path) -> list[_SourceRow]:
    rows: list[_SourceRow] = []
    with path.open("r", encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"row {len(rows) + 1}" + (f" (line {line_no})" if line_no != len(rows) + 1 else "")
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ClinicalqaDataError(f"{path} line {line_no}: not valid JSON ({exc.msg})") from None
            rows.append(_SourceRow(where=where, data=data))
    return rows


def _parquet_rows(files: list[Path]) -> list[_SourceRow]:
    rows: list[_SourceRow] = []
    for file in files:
        table = pq.read_table(file)
        missing = [c for c in COLUMNS if c not in table.column_names]
        if missing:
            raise ClinicalqaDataError(f"{file}: column(s) {missing} missing; found {table.column_names}")
        for data in table.select(list(COLUMNS)).to_pylist():
            rows.append(_SourceRow(where=f"row {len(rows) + 1}", data=data))
    return rows


# --------------------------------------------------------------------------- pinned Hub downloads


def _pin_file(spec: DatasetSpec, out_dir: Path) -> Path:
    src = spec.source
    key = hashlib.sha256(f"{src.location}\n{src.revision}\n{src.split}".encode()).hexdigest()[:12]
    return out_dir / f"hub-{key}.snapshot"


def _reuse_pinned_download(spec: DatasetSpec, out_dir: Path, expected_rows: int, log: Log) -> ClinicalqaSnapshot | None:
    """A commit-pinned Hub revision never changes, so its snapshot is made once per data dir."""
    if not _COMMIT_LIKE.fullmatch(spec.source.revision):
        return None
    pin = _pin_file(spec, out_dir)
    if not pin.is_file():
        return None
    path = out_dir / pin.read_text(encoding="utf-8").strip()
    if not path.is_file():
        return None
    n_rows = pq.read_metadata(path).num_rows
    if n_rows != expected_rows:
        return None
    log(f"clinicalqa: reusing snapshot {path.stem} of {spec.source.location}@{spec.source.revision}")
    return ClinicalqaSnapshot(snapshot_id=path.stem, path=path, n_rows=n_rows)


def _remember_pinned_download(spec: DatasetSpec, out_dir: Path, snapshot: ClinicalqaSnapshot) -> None:
    if _COMMIT_LIKE.fullmatch(spec.source.revision):
        atomic_write_bytes(_pin_file(spec, out_dir), snapshot.path.name.encode("utf-8"))


# --------------------------------------------------------------------------- writing


def _write_snapshot(rows: list[dict[str, Any]], out_dir: Path) -> ClinicalqaSnapshot:
    snapshot_id = snapshot_id_of(rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{snapshot_id}.parquet"
    if not path.is_file():
        with atomic_path(path) as tmp:
            pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp)
    return ClinicalqaSnapshot(snapshot_id=snapshot_id, path=path, n_rows=len(rows))
