"""Reading the VitalDB open-data API or a folder laid out like it: one *opener* per source returns
the raw bytes of an endpoint (``cases``, ``trks``, ``<tid>``), and the decoders turn those bytes
(gzip CSV or plain CSV) into tables and track series.

The HTTP opener adds what a 6,388-case download needs: a cache keyed by endpoint name (laid out
like the API, so a cache folder is itself a valid mirror), bounded concurrency, retries with
exponential backoff on 429, 5xx and broken connections, and resumability (a file reaches its
cached name only after it was read completely and decoded). A truncated or corrupt file is an
error naming the endpoint.
"""

from __future__ import annotations

import gzip
import re
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar
from urllib.parse import urlsplit

import httpx
import numpy as np
import polars as pl

from pipelines.engine.retry import Again, Backoff, RetriesExhausted, retry
from medbench.files import atomic_write_bytes

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
