"""Reading a Toy Hospital extract (``admissions.csv``, ``labevents.csv``; ``demo.py`` describes the
columns) from a folder or an http(s) base URL, into a content-addressed snapshot.

The snapshot is a folder ``<data>/snapshots/toyhospital/<id>/`` holding the two tables as typed
Parquet (``admissions.parquet``, ``labevents.parquet``); ``<id>`` is a hash of the two CSV files'
bytes, so the same extract always gives the same snapshot (and the same run ids).

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq

from warehouse.files import atomic_directory

FILES = ("admissions.csv", "labevents.csv")
TYPES = {
    "admissions.csv": {"hadm_id": pa.int64(), "subject_id": pa.int64(), "age": pa.int16(), "sex": pa.string(),
                       "admittime": pa.timestamp("s"), "dischtime": pa.timestamp("s"),
                       "transfusion_time": pa.timestamp("s")},
    "labevents.csv": {"labevent_id": pa.int64(), "subject_id": pa.int64(), "hadm_id": pa.int64(),
                      "itemid": pa.int32(), "charttime": pa.timestamp("s"), "valuenum": pa.float64(),
                      "valueuom": pa.string()},
}


class SourceError(ValueError):
    """The extract is missing a file or a column; the message says which and where."""


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: str
    folder: Path
    n_admissions: int
    n_results: int


def read_bytes(location: str, name: str) -> bytes:
    """One file of the extract at ``location`` (a folder, or an http(s) base URL)."""
    if location.startswith(("http://", "https://")):
        import httpx

        response = httpx.get(f"{location.rstrip('/')}/{name}", timeout=60.0, follow_redirects=True)
        if response.status_code != 200:
            raise SourceError(f"{location}/{name}: HTTP {response.status_code}; check the source location")
        return response.content
    path = Path(location).expanduser() / name
    if not path.is_file():
        raise SourceError(f"{path}: no such file; the source folder must hold {', '.join(FILES)}")
    return path.read_bytes()


def parse_table(name: str, payload: bytes) -> pa.Table:
    """A CSV file of the extract as a typed table (a missing column is a SourceError naming it)."""
    types = TYPES[name]
    table = pv.read_csv(io.BytesIO(payload), convert_options=pv.ConvertOptions(column_types=types,
                                                                                 strings_can_be_null=True))
    missing = [c for c in types if c not in table.column_names]
    if missing:
        raise SourceError(f"{name}: missing column(s) {', '.join(missing)}")
    return table.select(list(types))


def load_snapshot(location: str, out_dir: Path) -> Snapshot:
    """Read the extract at ``location`` and write (or find) its snapshot under ``out_dir``."""
    payloads = {name: read_bytes(location, name) for name in FILES}
    digest = hashlib.sha256()
    for name in FILES:
        digest.update(name.encode() + b"\0" + payloads[name])
    snapshot_id = digest.hexdigest()[:16]
    tables = {name: parse_table(name, payloads[name]) for name in FILES}
    folder = out_dir / snapshot_id
    if not (folder / "labevents.parquet").exists():
        with atomic_directory(folder, marker="labevents.parquet") as tmp:
            for name, table in tables.items():
                pq.write_table(table, tmp / name.replace(".csv", ".parquet"))
    return Snapshot(snapshot_id, folder, tables["admissions.csv"].num_rows, tables["labevents.csv"].num_rows)


def read_snapshot(snapshot: Path) -> tuple[pa.Table, pa.Table]:
    """(admissions, labevents) of a snapshot folder."""
    return pq.read_table(snapshot / "admissions.parquet"), pq.read_table(snapshot / "labevents.parquet")
