"""The VitalDB open-data loader: API or local mirror folder in, a content-hashed Parquet snapshot out.

The open-data API (``/cases``, ``/trks``, ``/<tid>``, each a gzip CSV) is not versioned, so what
pins a result is the content: the snapshot id is a hash of the decoded tables, never of file or
Parquet bytes, and the same content read from the API or from a folder laid out like it gives the
same id. Both sources go through one reader (an *opener*, ``openers.py``, returns the raw bytes of
an endpoint; the HTTP one caches, retries and resumes). A truncated or corrupt file is an error
naming the case and the track.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.datasets.vitaldb.openers import (  # noqa: F401  (VitaldbSourceError, CorruptFile: the loader's errors)
    CorruptFile,
    Opener,
    VitaldbSourceError,
    make_opener,
    parse_table,
    parse_track,
)
from pipelines.engine.progress import Progress
from medbench.files import atomic_directory

DEFAULT_TRACK = "Solar8000/ART_MBP"
SNAPSHOT_FORMAT = "vitaldb-snapshot/1"


# --------------------------------------------------------------------------- snapshot


@dataclass(frozen=True)
class VitaldbSnapshot:
    snapshot_id: str
    dir: Path
    n_cases: int
    n_track_cases: int
    n_readings: int


@dataclass(frozen=True)
class SnapshotTables:
    cases: pl.DataFrame
    tracks: pl.DataFrame
    readings: pl.DataFrame


def load_vitaldb_snapshot(
    source: str,
    out_dir: Path,
    cache_dir: Path,
    track: str = DEFAULT_TRACK,
    log: Callable[[str], None] = print,
    max_workers: int = 8,
    **http_options,
) -> VitaldbSnapshot:
    """Read ``cases``, ``trks`` and every track named exactly ``track``; write the snapshot.

    ``http_options`` go to :class:`HttpOpener` (``retries``, ``backoff_s``, ``max_backoff_s``,
    ``timeout_s``). Returns the snapshot, written to ``out_dir/<snapshot_id>/``.
    """
    opener = make_opener(str(source), Path(cache_dir), max_workers=max_workers, **http_options)
    try:
        cases = opener.read("cases", lambda b: parse_table(b, ["caseid", "subjectid"]), "the cases table")
        trks = opener.read(
            "trks",
            lambda b: parse_table(
                b, ["caseid", "tname", "tid"], {"caseid": pl.Int64, "tname": pl.String, "tid": pl.String}
            ),
            "the trks table",
        )
        cases = cases.sort("caseid")
        trks = trks.sort("caseid", "tname", "tid")
        wanted = trks.filter(pl.col("tname") == track)
        where = opener.describe()
        log(f"vitaldb: {cases.height} cases, {trks.height} tracks, {wanted.height} named {track} from {where}")
        readings = _read_tracks(opener, wanted, track, log, max_workers)
    finally:
        opener.close()
    snapshot = write_snapshot(cases, trks, readings, Path(out_dir), track=track, source=opener.describe())
    log(f"vitaldb: snapshot {snapshot.snapshot_id}: {snapshot.n_readings} readings from {snapshot.n_track_cases} cases")
    return snapshot


def _read_tracks(
    opener: Opener, wanted: pl.DataFrame, track: str, log: Callable[[str], None], max_workers: int
) -> pl.DataFrame:
    rows = list(zip(wanted["caseid"].to_list(), wanted["tid"].to_list(), strict=True))
    progress = Progress(f"vitaldb {track}", len(rows), log)

    def one(row: tuple[int, str]) -> tuple[np.ndarray, np.ndarray]:
        caseid, tid = row
        what = f"case {caseid}, track {track} (tid {tid})"
        result = opener.read(tid, lambda b: parse_track(b, track), what)
        progress.advance()
        return result

    with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
        futures = [pool.submit(one, row) for row in rows]
        try:
            series = [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return _long_readings([r[0] for r in rows], series)


def _long_readings(caseids: list[int], series: list[tuple[np.ndarray, np.ndarray]]) -> pl.DataFrame:
    """Long form sorted by (caseid, time); equal times keep file order (the last one read wins a bin)."""
    if not series:
        return pl.DataFrame(schema={"caseid": pl.Int32, "time": pl.Float64, "value": pl.Float32})
    lengths = np.array([len(t) for t, _ in series], dtype=np.int64)
    caseid = np.repeat(np.asarray(caseids, dtype=np.int32), lengths)
    times = np.concatenate([t for t, _ in series]) if len(series) else np.zeros(0)
    values = np.concatenate([v for _, v in series]) if len(series) else np.zeros(0, np.float32)
    ordered = bool(np.all(np.diff(caseid) >= 0)) and bool(np.all((np.diff(times) >= 0) | (np.diff(caseid) > 0)))
    if not ordered:
        order = np.lexsort((times, caseid))  # stable: ties keep the order they were read in
        caseid, times, values = caseid[order], times[order], values[order]
    return pl.DataFrame({"caseid": caseid, "time": times, "value": values})


def snapshot_id_of(cases: pl.DataFrame, tracks: pl.DataFrame, readings: pl.DataFrame, track: str) -> str:
    """First 16 hex of sha256 over a canonical serialisation of the three tables' contents.

    Canonical form: a format tag and the track name; for ``cases`` (sorted by caseid) and
    ``tracks`` (sorted by caseid, tname, tid) each column's name and dtype, then the table as CSV
    (polars' shortest round-trip float text); for ``readings`` the little-endian bytes of caseid
    (int32), time (float64) and value (float32), in (caseid, time) order.
    """
    digest = hashlib.sha256()
    digest.update(f"{SNAPSHOT_FORMAT}\ntrack={track}\n".encode())
    for name, df in (("cases", cases), ("tracks", tracks)):
        schema = ",".join(f"{col}:{dtype}" for col, dtype in df.schema.items())
        digest.update(f"{name}\n{schema}\n".encode())
        digest.update(df.write_csv().encode())
    digest.update(f"readings\n{readings.height}\n".encode())
    digest.update(readings["caseid"].to_numpy().astype("<i4").tobytes())
    digest.update(readings["time"].to_numpy().astype("<f8").tobytes())
    digest.update(readings["value"].to_numpy().astype("<f4").tobytes())
    return digest.hexdigest()[:16]


def write_snapshot(
    cases: pl.DataFrame,
    tracks: pl.DataFrame,
    readings: pl.DataFrame,
    out_dir: Path,
    track: str = DEFAULT_TRACK,
    source: str = "",
) -> VitaldbSnapshot:
    """Write ``out_dir/<snapshot_id>/{cases,tracks,readings}.parquet`` and ``snapshot.json`` atomically."""
    readings = readings.select(
        pl.col("caseid").cast(pl.Int32), pl.col("time").cast(pl.Float64), pl.col("value").cast(pl.Float32)
    )
    snapshot_id = snapshot_id_of(cases, tracks, readings, track)
    final = Path(out_dir) / snapshot_id
    info = {
        "format": SNAPSHOT_FORMAT,
        "snapshot_id": snapshot_id,
        "track": track,
        "source": source,
        "n_cases": cases.height,
        "n_track_cases": int(readings["caseid"].n_unique()) if readings.height else 0,
        "n_readings": readings.height,
    }
    snapshot = VitaldbSnapshot(snapshot_id, final, info["n_cases"], info["n_track_cases"], info["n_readings"])
    if (final / "snapshot.json").exists():
        return snapshot  # same id, same content: already written
    with atomic_directory(final, marker="snapshot.json") as tmp:
        _write_snapshot_files(tmp, cases, tracks, readings, info)
    return snapshot


def _write_snapshot_files(tmp: Path, cases: pl.DataFrame, tracks: pl.DataFrame, readings: pl.DataFrame,
                          info: dict) -> None:
    cases.write_parquet(tmp / "cases.parquet")
    tracks.write_parquet(tmp / "tracks.parquet")
    pq.write_table(
        pa.Table.from_arrays(
            [
                pa.array(readings["caseid"].to_numpy()),
                pa.array(readings["time"].to_numpy()),
                pa.array(readings["value"].to_numpy()),
            ],
            names=["caseid", "time", "value"],
        ),
        tmp / "readings.parquet",
        compression="zstd",
        compression_level=1,
        row_group_size=4 * 1024 * 1024,
    )
    (tmp / "snapshot.json").write_text(json.dumps(info, indent=2) + "\n")


def read_snapshot_info(snapshot_dir: Path) -> VitaldbSnapshot:
    info = json.loads((Path(snapshot_dir) / "snapshot.json").read_text())
    return VitaldbSnapshot(
        info["snapshot_id"], Path(snapshot_dir), info["n_cases"], info["n_track_cases"], info["n_readings"]
    )


def open_vitaldb_snapshot(snapshot_dir: Path) -> SnapshotTables:
    """The snapshot's three tables as polars DataFrames."""
    snapshot_dir = Path(snapshot_dir)
    return SnapshotTables(
        cases=pl.read_parquet(snapshot_dir / "cases.parquet"),
        tracks=pl.read_parquet(snapshot_dir / "tracks.parquet"),
        readings=pl.read_parquet(snapshot_dir / "readings.parquet"),
    )
