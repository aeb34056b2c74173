"""Counting reuses: lookups answered ``evaluated`` and downloads of a predictions file.

The count is the service's one piece of mutable state, so it lives outside the warehouse (which
stays read-only and immutable), in ``state/reuses.sqlite3`` under the data directory. It must be
exact when several processes serve one data directory (``medbench serve --workers N``, or two
servers side by side): a JSON file rewritten by each process kept only the last writer's count
(measured: 400 lookups over two workers, 282 kept). SQLite needs no extra service and gives atomic
increments across processes:

- ``add`` only bumps an in-memory pending number (the request path never touches the disk);
- ``flush`` (every second from a background thread, and once at shutdown) adds the pending number
  in one transaction, ``UPDATE ... SET n = n + ?``, so no process overwrites another's increments;
  a crash loses at most the last second; a store that cannot be written (a read-only ``state/``)
  keeps the reuses pending in memory, logged once, then at most every ``REPEAT_WARNING_S``;
- ``count`` is the shared total read from SQLite (cached for ``READ_CACHE_S``) plus this process's
  pending increments, so a process sees its own reuses at once and every other's within a second.
The database is in WAL mode: readers never wait for the writer.

A state file that cannot be used (a directory, unreadable, not SQLite, corrupt) never stops the
server: it is set aside (renamed with an ``.unreadable-<time>`` suffix), a warning is logged and a
fresh store starts. The count of the JSON store used before (``state/reuses.json``) is moved in
once, when the SQLite store is created; a JSON count that is negative or not an integer is set
aside the same way.

What counts (docs/api.md, "Reuses"):
- a GET of ``/v1/lookup`` whose answer is ``evaluated``, including a 304 revalidation (the client
  relied on the result again); a HEAD never counts, nor does ``not_evaluated`` or an error;
- a GET of a predictions file answered 200 once the whole file has been sent, or answered 304;
  a HEAD, an error, or an interrupted download never counts.
The public API is open, so any client can inflate the count by repeating lookups (README).
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from medbench.files import read_regular

log = logging.getLogger(__name__)

STORE_NAME = "reuses.sqlite3"
LEGACY_NAME = "reuses.json"
READ_CACHE_S = 0.25
REPEAT_WARNING_S = 600.0  # while the store cannot be written, a reminder at most this often (see flush_every)
BUSY_TIMEOUT_MS = 5000  # a flush waits this long for another process's transaction (in its own thread)
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS reuses (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL CHECK (n >= 0))"
)


class ReuseStore(msgspec.Struct):
    """The JSON store written before the SQLite one (read once, for the migration)."""

    reuses: int
    updated_at: str = ""


class UnusableStore(Exception):
    pass


def set_aside(path: Path, why: object) -> Path | None:
    """Rename ``path`` (and SQLite's side files) out of the way; None when even that fails."""
    aside = path.with_name(f"{path.name}.unreadable-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    try:
        os.replace(path, aside)
    except OSError as exc:
        log.error("reuse store %s is unusable (%s) and could not be moved aside: %s", path, why, exc)
        return None
    for suffix in ("-wal", "-shm", "-journal"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            try:
                os.replace(side, aside.with_name(aside.name + suffix))
            except OSError:
                pass
    log.warning("reuse store %s was unusable (%s); moved it to %s and started a fresh one", path, why, aside)
    return aside


def legacy_count(path: Path) -> int:
    """The count in the old JSON store, or 0 (a bad file is set aside); the file is renamed once read."""
    try:
        raw = read_regular(path)
    except FileNotFoundError:
        return 0
    except OSError as exc:  # a directory, or unreadable
        set_aside(path, exc)
        return 0
    try:
        count = msgspec.json.decode(raw, type=ReuseStore, strict=True).reuses
        if count < 0:
            raise ValueError(f"negative count {count}")
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
        set_aside(path, exc)
        return 0
    return count


class ReuseCounter:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()  # pending and the cached total
        self._write_lock = threading.Lock()  # one flush at a time
        self._read_lock = threading.Lock()
        self._pending = 0
        self._total = 0
        self._read_at = 0.0
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._tried = False  # an open was attempted (once it failed for good, reuses stay in memory)
        self._open()

    # ---- the store ----
    def _open(self) -> None:
        """Open (or create) the store; it stays closed, and is retried at each flush, while the data
        directory does not exist (a server may start before the first ``medbench materialize``)."""
        if not self.path.parent.parent.is_dir():
            return
        self._tried = True
        for attempt in (1, 2):
            try:
                self.path.parent.mkdir(exist_ok=True)
                # Several workers start at once: one at a time opens (and maybe creates) the store, so
                # none sees a half-created file and sets aside the store another one is using.
                guard = os.open(self.path.parent, os.O_RDONLY)  # a lock on the state folder itself
                try:
                    fcntl.flock(guard, fcntl.LOCK_EX)
                    self._writer, self._reader = self._connect()
                    self._total = self._read(self._reader)
                finally:
                    os.close(guard)  # releases the lock
                self._read_at = time.monotonic()
                return
            except (sqlite3.Error, OSError, UnusableStore) as exc:
                self._close()
                if attempt == 2 or set_aside(self.path, exc) is None:
                    log.error("reuses are counted in memory only (not kept across restarts or processes): %s", exc)
                    return

    def _connect(self) -> tuple[sqlite3.Connection, sqlite3.Connection]:
        if self.path.exists() and not self.path.is_file():
            raise UnusableStore("not a regular file")
        writer = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
        try:
            if writer.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise UnusableStore("corrupt SQLite database")
            writer.execute("PRAGMA journal_mode=WAL")
            writer.execute("PRAGMA synchronous=NORMAL")  # durable at each checkpoint; a crash loses at most the WAL tail
            writer.execute("BEGIN IMMEDIATE")  # one process creates the row (and migrates the JSON count)
            try:
                writer.execute(SCHEMA)
                if writer.execute("SELECT n FROM reuses WHERE id = 1").fetchone() is None:
                    legacy = self.path.with_name(LEGACY_NAME)
                    count = legacy_count(legacy)
                    writer.execute("INSERT INTO reuses (id, n) VALUES (1, ?)", (count,))
                    writer.execute("COMMIT")
                    if legacy.exists():
                        os.replace(legacy, legacy.with_name(f"{LEGACY_NAME}.migrated"))
                        log.warning("moved the reuse count %d from %s into %s", count, legacy, self.path)
                else:
                    writer.execute("COMMIT")
            except BaseException:
                if writer.in_transaction:
                    writer.execute("ROLLBACK")
                raise
            reader = sqlite3.connect(self.path, timeout=0.05, isolation_level=None, check_same_thread=False)
        except BaseException:
            writer.close()
            raise
        return writer, reader

    @staticmethod
    def _read(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT n FROM reuses WHERE id = 1").fetchone()
        if row is None or not isinstance(row[0], int) or row[0] < 0:
            raise UnusableStore(f"unexpected reuse row {row!r}")
        return row[0]

    def _close(self) -> None:
        for conn in (self._writer, self._reader):
            if conn is not None:
                conn.close()
        self._writer = self._reader = None

    # ---- counting ----
    @property
    def count(self) -> int:
        """The shared total (at most ``READ_CACHE_S`` old) plus this process's unflushed reuses."""
        if self._reader is not None and time.monotonic() - self._read_at > READ_CACHE_S and self._read_lock.acquire(False):
            try:
                total = self._read(self._reader)
                with self._lock:
                    self._total = max(self._total, total)  # the total only grows
                    self._read_at = time.monotonic()
            except (sqlite3.Error, UnusableStore) as exc:
                log.debug("could not read the reuse total (using the cached one): %s", exc)
            finally:
                self._read_lock.release()
        with self._lock:
            return self._total + self._pending

    @property
    def pending(self) -> int:
        """This process's reuses not yet in the store."""
        with self._lock:
            return self._pending

    def add(self, n: int = 1) -> None:
        with self._lock:
            self._pending += n

    def flush(self) -> bool:
        """Add this process's pending reuses to the store; True when a write happened.

        Raises OSError when the store cannot be written (the pending reuses are kept for the next try).
        """
        with self._write_lock:
            with self._lock:
                pending = self._pending
            if pending == 0:
                return False
            if self._writer is None and not self._tried:
                self._open()
            if self._writer is None:
                return False
            try:
                self._writer.execute("BEGIN IMMEDIATE")
                total = self._writer.execute("UPDATE reuses SET n = n + ? WHERE id = 1 RETURNING n", (pending,)).fetchone()[0]
                self._writer.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._writer.in_transaction:
                    self._writer.execute("ROLLBACK")
                raise OSError(f"could not add {pending} reuses to {self.path}: {exc}") from exc
            with self._lock:
                self._pending -= pending
                self._total = max(self._total, total)
            return True

    def close(self) -> None:
        with self._write_lock, self._read_lock:
            self._close()


async def flush_every(counter: ReuseCounter, seconds: float, repeat_s: float | None = None,
                      clock: Callable[[], float] = time.monotonic) -> None:
    """Background task: flush the counter every ``seconds`` until cancelled, in a thread (a flush may
    wait for another process's transaction, which must not stall the event loop).

    A store that cannot be written (a read-only ``state/``, a full disk) fails every flush; one warning
    per second buried the log (issue #22). So the failure is logged once when it starts, again at most
    every ``repeat_s`` while it lasts (``REPEAT_WARNING_S``), and once when a write succeeds again. The
    server keeps serving and counting in memory meanwhile; nothing pending is lost while it runs.
    """
    repeat_s = REPEAT_WARNING_S if repeat_s is None else repeat_s
    failing_since: float | None = None
    warned_at = 0.0
    while True:
        await asyncio.sleep(seconds)
        try:
            wrote = await asyncio.to_thread(counter.flush)
        except OSError as exc:
            now = clock()
            if failing_since is None:
                failing_since = warned_at = now
                log.warning("could not write the reuse store %s (reuses are kept in memory and retried every %g s; "
                            "logged again at most every %g min while it lasts): %s",
                            counter.path, seconds, repeat_s / 60, exc)
            elif now - warned_at >= repeat_s:
                warned_at = now
                log.warning("still cannot write the reuse store %s (for %.0f min now; %d reuses in memory): %s",
                            counter.path, (now - failing_since) / 60, counter.pending, exc)
            continue
        if wrote and failing_since is not None:
            log.warning("the reuse store %s is writable again (after %.0f min); the reuses kept in memory were added",
                        counter.path, (clock() - failing_since) / 60)
            failing_since = None
