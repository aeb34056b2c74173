"""The VitalDB open-data loader: API or local mirror folder in, a content-hashed Parquet snapshot out.

The open-data API (``/cases``, ``/trks``, ``/<tid>``, each a gzip CSV) is not versioned, so what
pins a result is the content: the snapshot id is a hash of the decoded tables, never of file or
Parquet bytes, and the same content read from the API or from a folder laid out like it gives the
same id. Both sources go through one reader (an *opener* returns the raw bytes of an endpoint); the
HTTP opener adds what a 6,388-case download needs: a cache keyed by endpoint name (laid out like
the API, so a cache folder is itself a valid mirror), bounded concurrency, retries with exponential
backoff on 429, 5xx and broken connections, and resumability (a file reaches its cached name only
after it was read completely and decoded). A truncated or corrupt file is an error naming the case
and the track.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import threading
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar
from urllib.parse import urlsplit

import httpx
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.engine.progress import Progress
from pipelines.engine.retry import Again, Backoff, RetriesExhausted, retry
from warehouse.files import atomic_directory, atomic_write_bytes

DEFAULT_TRACK = "Solar8000/ART_MBP"
SNAPSHOT_FORMAT = "vitaldb-snapshot/1"
_NULLS = ["", "nan", "NaN", "-nan", "-nan(ind)", "nan(ind)"]
_RETRY_STATUS = {429, 500, 502, 503, 504}

T = TypeVar("T")


class VitaldbSourceError(RuntimeError):
    """The source could not give a complete, well-formed file; the message says which one."""


class CorruptFile(ValueError):
    """Bytes that do not decode to the expected gzip CSV (truncated, corrupt, wrong header)."""


# --------------------------------------------------------------------------- decoding


def decode_body(data: bytes) -> bytes:
    """The CSV text of an endpoint body: gzip is unwrapped (fully checked: CRC and length).

    The API serves gzip files; a server that also applies ``Content-Encoding: gzip`` on top would
    wrap them twice, so up to two layers are unwrapped.
    """
    for _ in range(2):
        if data[:2] != b"\x1f\x8b":
            break
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as exc:
            raise CorruptFile(f"truncated or corrupt gzip ({exc})") from None
    if not data.strip():
        raise CorruptFile("empty file")
    return data


def _header(text: bytes) -> str:
    return text.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "replace")


def parse_track(data: bytes, tname: str) -> tuple[np.ndarray, np.ndarray]:
    """(time float64, value float32) of a numeric track; rows without a value are dropped."""
    text = decode_body(data)
    expected = f"Time,{tname}"
    if _header(text) != expected:
        raise CorruptFile(f"header is {_header(text)[:80]!r}, expected {expected!r}")
    try:
        df = pl.read_csv(text, schema={"Time": pl.Float64, tname: pl.Float64}, null_values=_NULLS)
    except pl.exceptions.PolarsError as exc:
        raise CorruptFile(f"malformed CSV ({str(exc).splitlines()[0]})") from None
    times = df["Time"].to_numpy(allow_copy=True)
    values = df[tname].to_numpy(allow_copy=True)
    keep = np.isfinite(times) & np.isfinite(values)
    return times[keep].astype(np.float64), values[keep].astype(np.float32)


def parse_table(data: bytes, required: list[str], schema: dict[str, pl.DataType] | None = None) -> pl.DataFrame:
    text = decode_body(data)
    try:
        if schema is not None:
            df = pl.read_csv(text, schema_overrides=schema, infer_schema_length=None)
        else:
            df = pl.read_csv(text, infer_schema_length=None)
    except pl.exceptions.PolarsError as exc:
        raise CorruptFile(f"malformed CSV ({str(exc).splitlines()[0]})") from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise CorruptFile(f"missing columns {missing} (header {_header(text)[:120]!r})")
    return df


# --------------------------------------------------------------------------- openers


class Opener(Protocol):
    """Gives the decoded content of one endpoint (``cases``, ``trks`` or a tid)."""

    def describe(self) -> str: ...

    def read(self, name: str, decode: Callable[[bytes], T], what: str) -> T: ...

    def close(self) -> None: ...


class FolderOpener:
    """A local folder laid out like the API: one file per endpoint, named by it."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise VitaldbSourceError(f"VitalDB source folder {self.folder} does not exist")

    def describe(self) -> str:
        return str(self.folder)

    def read(self, name: str, decode: Callable[[bytes], T], what: str) -> T:
        path = self.folder / name
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise VitaldbSourceError(f"{what}: file {path} is missing") from None
        try:
            return decode(data)
        except CorruptFile as exc:
            raise VitaldbSourceError(f"{what}: {exc} in {path}") from None

    def close(self) -> None:
        return None


class HttpOpener:
    """The API over HTTP, with a resumable on-disk cache and retries with exponential backoff."""

    def __init__(
        self,
        base_url: str,
        cache_dir: Path,
        max_workers: int = 8,
        retries: int = 6,
        backoff_s: float = 0.5,
        max_backoff_s: float = 60.0,
        timeout_s: float = 120.0,
    ):
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        self.cache = Path(cache_dir) / re.sub(r"[^A-Za-z0-9.-]+", "_", parts.netloc + parts.path).strip("_")
        self.cache.mkdir(parents=True, exist_ok=True)
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.downloads = 0
        self._lock = threading.Lock()
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 20.0)),
            limits=httpx.Limits(max_connections=max_workers, max_keepalive_connections=max_workers),
            follow_redirects=True,
            headers={"Accept-Encoding": "gzip"},  # the body is cached as sent: gzip or plain, nothing else
        )

    def describe(self) -> str:
        return self.base_url

    def close(self) -> None:
        self._client.close()

    def read(self, name: str, decode: Callable[[bytes], T], what: str) -> T:
        cached = self.cache / name
        if cached.exists():
            try:
                return decode(cached.read_bytes())
            except CorruptFile:
                cached.unlink()  # only verified files are renamed into place; this one was damaged since
        return self._download(name, decode, what)

    def _download(self, name: str, decode: Callable[[bytes], T], what: str) -> T:
        url = f"{self.base_url}/{name}"

        def attempt() -> T | Again:
            try:
                with self._client.stream("GET", url) as response:
                    if response.status_code in _RETRY_STATUS:
                        hint = response.headers.get("retry-after")  # whole seconds only, as always
                        return Again(f"HTTP {response.status_code}",
                                     float(hint) if hint and hint.strip().isdigit() else None)
                    if response.status_code != 200:
                        raise VitaldbSourceError(f"{what}: {url} answered HTTP {response.status_code}")
                    data = b"".join(response.iter_raw())
                    expected = response.headers.get("content-length")
            except httpx.TransportError as exc:
                return Again(f"{type(exc).__name__}: {exc}")
            if expected is not None and expected.isdigit() and int(expected) != len(data):
                return Again(f"truncated body ({len(data)} of {expected} bytes)")
            try:
                result = decode(data)
            except CorruptFile as exc:
                return Again(str(exc))
            self._store(name, data)
            return result

        # Exponential backoff, or the server's Retry-After when it asks for longer (both capped).
        backoff = Backoff(self.backoff_s, self.max_backoff_s)
        try:
            return retry(attempt, self.retries + 1, backoff, sleep=time.sleep)
        except RetriesExhausted as exc:
            raise VitaldbSourceError(
                f"{what}: {url} failed after {exc.attempts} attempts; last problem: {exc.last.problem}"
            ) from None

    def _store(self, name: str, data: bytes) -> None:
        atomic_write_bytes(self.cache / name, data)
        with self._lock:
            self.downloads += 1


def is_url(source: str) -> bool:
    return str(source).startswith(("http://", "https://"))


def make_opener(source: str, cache_dir: Path, max_workers: int = 8, **http_options) -> Opener:
    if is_url(source):
        return HttpOpener(source, cache_dir, max_workers=max_workers, **http_options)
    return FolderOpener(Path(source))


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
