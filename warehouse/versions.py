"""Which published version to read, and why: the pointer's, or the newest valid kept one.

``CURRENT`` names the version to serve, but files on disk can be damaged behind medbench's back: the
pointer replaced by a directory, made unreadable to the server's user, overwritten with bytes that
are not text; the version file truncated by a full disk or deleted by hand. The publisher keeps the
last three versions, so a reader need not give up: ``choose`` falls back to the newest kept version
that opens, and says why. Every cause here is a short sentence without server paths, safe to put in
a public 503 body; the details (paths, DuckDB's own message) belong in the log.

A damaged pointer is never repaired by a reader (the server may run as another user, and readers
must stay read-only); the next publish repairs it (``warehouse.publish``), and so does every
``medbench materialize``, even one that publishes nothing (``warehouse.repair.repair_current``).

Its file name is shared on purpose: the published data's module; the route or command of the same
name serves it.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

import duckdb
import msgspec

from medbench.files import (
    PUBLIC_FILE,
    NotRegularFile,
    atomic_write_bytes,
    read_regular,
)
from medbench.layout import DataDir
from warehouse.schema import TABLES

log = logging.getLogger(__name__)

# <UTC time to the microsecond>Z-<first 8 hex digits of the content hash>, as ``publish`` names them
VERSION_RE = re.compile(r"^[0-9]{8}T[0-9]{12}Z-[0-9a-f]{8}$")
POINTER_LIMIT = 4096  # a pointer holds one short line; anything longer is not one
POINTER_MISSING = "warehouse/CURRENT is missing"


class PointerError(ValueError):
    """``CURRENT`` exists but cannot be used; ``cause`` names why, without paths."""

    def __init__(self, cause: str):
        super().__init__(cause)
        self.cause = cause


def read_pointer(data: DataDir) -> str | None:
    """The version ``CURRENT`` names; None when there is no pointer; PointerError when it is damaged."""
    try:
        raw = read_regular(data.pointer, POINTER_LIMIT + 1)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise PointerError("warehouse/CURRENT is a directory, not a file") from None
    except NotRegularFile as exc:  # a FIFO would block the reader, a device never end: a damaged pointer
        raise PointerError(f"warehouse/CURRENT {exc.strerror}") from None
    except PermissionError:
        raise PointerError("warehouse/CURRENT cannot be read by the server's user (permission denied)") from None
    except OSError as exc:
        raise PointerError(f"warehouse/CURRENT cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise PointerError("warehouse/CURRENT is not UTF-8 text") from None
    if not text:
        raise PointerError("warehouse/CURRENT is empty")
    if len(raw) > POINTER_LIMIT or not VERSION_RE.match(text):
        raise PointerError("warehouse/CURRENT does not name a version")
    return text


def _stamps_path(data: DataDir):
    return data.warehouse / ".sound.json"


def _file_key(st: os.stat_result) -> list[int]:
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def stamped_sound(data: DataDir, version: str, st: os.stat_result | None = None) -> bool:
    """Whether the publisher that built ``version``'s file stamped it sound and the file is the one it
    stamped (same inode, size and modification time: a truncated or rewritten file is not). Why: the
    full ``probe`` reads every block, so a publish checking the current and the kept files cost time
    in proportion to the board (docs/benchmarks.md, "Publishing at scale"); a file is never written
    again once built, so the builder's check holds until the file changes."""
    try:
        st = st or os.stat(data.version_file(version))
        stamps = msgspec.json.decode(read_regular(_stamps_path(data), 1 << 20))
    except (OSError, ValueError):
        return False
    return isinstance(stamps, dict) and stamps.get(version) == _file_key(st)


def stamp_sound(data: DataDir, version: str) -> None:
    """Record that the file of ``version``, just built and checkpointed by the publisher (under its
    lock), is sound; stamps of versions no longer kept are dropped."""
    kept = set(kept_versions(data))
    try:
        stamps = msgspec.json.decode(read_regular(_stamps_path(data), 1 << 20))
    except (OSError, ValueError):
        stamps = {}
    stamps = {v: k for v, k in (stamps.items() if isinstance(stamps, dict) else ()) if v in kept}
    stamps[version] = _file_key(os.stat(data.version_file(version)))
    atomic_write_bytes(_stamps_path(data), msgspec.json.encode(stamps), mode=PUBLIC_FILE)


def kept_versions(data: DataDir) -> list[str]:
    """The versions whose files are in ``warehouse/``, newest first (names sort by publish time)."""
    try:
        names = os.listdir(data.warehouse)
    except OSError:
        return []
    found = (n[len("medbench-"):-len(".duckdb")] for n in names if n.startswith("medbench-") and n.endswith(".duckdb"))
    return sorted((v for v in found if VERSION_RE.match(v)), reverse=True)


class Damaged(Exception):
    """A version's file is present but DuckDB refuses it (truncated, overwritten, not a database)."""


def probe(data: DataDir, version: str) -> str | None:
    """None when ``version``'s file opens read-only and its ``meta`` names it; otherwise the cause.

    Raises ``Damaged`` (with the cause) only when the file is certainly bad, as opposed to missing,
    unreadable to this user, or failing for a reason that may pass (too many open files): the
    publisher deletes damaged files, nothing else.
    """
    path = data.version_file(version)
    try:
        read_regular(path, 1)
    except FileNotFoundError:
        return "its file is missing"
    except PermissionError:
        return "its file cannot be read by the server's user (permission denied)"
    except IsADirectoryError:
        return "its file is a directory"
    except NotRegularFile as exc:  # DuckDB would block on a FIFO: never handed to it
        raise Damaged(f"its file {exc.strerror}") from None
    except OSError as exc:
        return f"its file cannot be read ({exc.strerror or type(exc).__name__})"
    try:
        con = duckdb.connect(str(path), read_only=True)
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'warehouse_version'").fetchone()
            present = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
            for table in TABLES:  # every block of every table is read, and DuckDB checks its checksum;
                if table.__table__ in present:  # a table added by a later schema is absent from older files
                    # (hashed inside DuckDB: one row back, not the table's rows turned into Python objects)
                    con.execute(f"SELECT bit_xor(hash(COLUMNS(*))) FROM {table.__table__}").fetchall()
        finally:
            con.close()
    except duckdb.Error as exc:
        log.debug("warehouse version %s failed its check: %s", version, exc)
        if "lock" in str(exc).lower():
            return "its file is locked by another process"
        raise Damaged("its file is not a complete DuckDB database (truncated or overwritten?)") from exc
    if row is None or row[0] != version:
        raise Damaged(f"its file holds version {row[0] if row else 'none'}, not {version}")
    return None


def load_failure(data: DataDir, version: str, exc: BaseException) -> str:
    """A public cause for ``exc``, raised while loading ``version`` (``warehouse.read.READ_ERRORS``)."""
    if isinstance(exc, (duckdb.Error, OSError)):
        return check(data, version) or "its file is not a complete DuckDB database (truncated or overwritten?)"
    return "its tables hold values this server cannot decode"


_CHECKED: dict[tuple, str | None] = {}  # (path, inode, size, mtime, mode, owner) -> check's answer: files are immutable


def check(data: DataDir, version: str) -> str | None:
    """``probe`` with ``Damaged`` folded into the returned cause; remembered per file (a version file
    is never rewritten, and a changed one has another size or mtime), so that readers calling it
    before every query (the pipeline's lookups) read the whole file once per process."""
    path = data.version_file(version)
    try:
        st = os.stat(path)
        key: tuple | None = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode, st.st_uid)
    except OSError:
        key = None
    if key is not None and key in _CHECKED:
        return _CHECKED[key]
    if key is not None and stamped_sound(data, version, st):
        _CHECKED[key] = None
        return None
    try:
        cause = probe(data, version)
    except Damaged as exc:
        cause = str(exc)
    if key is not None and (cause is None or cause.startswith("its file is not") or "holds version" in cause):
        if len(_CHECKED) > 256:
            _CHECKED.clear()
        _CHECKED[key] = cause
    return cause


@dataclass(frozen=True)
class Choice:
    """What to read: ``version`` (None: nothing can be), the pointer's version (None when missing or
    damaged), and ``cause``: why ``version`` is not the pointer's one, or why there is none."""

    version: str | None
    pointer: str | None
    cause: str | None

    @property
    def fallback(self) -> bool:
        return self.version is not None and self.cause is not None


def pointer_state(data: DataDir) -> tuple[str | None, str | None]:
    """(the version the pointer names, None) or (None, why the pointer is unusable or missing)."""
    try:
        pointer = read_pointer(data)
    except PointerError as exc:
        return None, exc.cause
    return pointer, (None if pointer else POINTER_MISSING)


def choose(data: DataDir) -> Choice:
    """The pointer's version when its file is sound, else the newest kept version that is (checked
    with ``check``; a caller that loads the whole version may still find it damaged: see
    ``warehouse.read.read_servable``)."""
    pointer, cause = pointer_state(data)
    if pointer is not None:
        cause = check(data, pointer)
        if cause is None:
            return Choice(pointer, pointer, None)
        cause = f"warehouse version {pointer} cannot be read: {cause}"
    kept = [v for v in kept_versions(data) if v != pointer]
    if pointer is None and not kept:  # nothing published yet, or a damaged pointer and nothing to fall back to
        return Choice(None, None, None if cause == POINTER_MISSING else cause)
    for version in kept:
        if check(data, version) is None:
            return Choice(version, pointer, cause)
    return Choice(None, pointer, f"{cause}, and no kept version can be read either")


__all__ = [
    "POINTER_MISSING",
    "VERSION_RE",
    "Choice",
    "Damaged",
    "PointerError",
    "check",
    "choose",
    "kept_versions",
    "load_failure",
    "pointer_state",
    "probe",
    "read_pointer",
]
