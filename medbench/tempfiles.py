"""Removing the temporary files that killed writers leave behind, and never a live writer's.

Every writer puts its output beside the destination under ``medbench.files.temp_name``'s hidden
name, ``.<name>.<pid>.<thread>.tmp`` (a folder for ``atomic_directory``, ``.link`` for a symlink;
DuckDB adds ``.wal`` beside a database it builds), and renames it into place when done. A writer
killed halfway leaves that temp behind, and nothing else would ever remove it: a killed publish
leaves a partial DuckDB file and its WAL, a killed snapshot download a folder of partial files.

The name says which process wrote it, so a temp is stale when that process is gone: no process has
that PID, or the one that has it started after the temp was last written (the PID was reused).
Its age must also pass ``min_age_s``, a margin for writers this host cannot see (another PID
namespace sharing the data directory). Temps of this process are never touched (another thread may
be writing one). The publisher needs no such guesswork for ``warehouse/``: it holds
``publish_lock``, so no other publish is running there and every temp in it is stale.

``clean_stale_temp`` is for any step that writes into the data directory (pipelines call it before
a run); ``publish`` calls it, holding the lock, for the warehouse.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from medbench.layout import DataDir

log = logging.getLogger(__name__)

TEMP_RE = re.compile(r"^\..+\.(?P<pid>[0-9]+)\.[0-9]+\.(?:tmp|link)(?:\.wal)?$")
LEGACY_RE = re.compile(r"^(?:\.)?medbench-.+\.duckdb\.tmp(?:\.wal)?$")  # warehouse temps named without a PID
LOCK_NAME = ".publish.lock"
DEFAULT_MIN_AGE_S = 60.0
MAX_DEPTH = 3  # snapshots/<dataset>/<temp>, artifacts/<run>/<temp>, instances/<task>/<temp>
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _boot_time() -> float | None:
    try:
        with open("/proc/stat", "rb") as fh:
            for line in fh:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


_BOOT = _boot_time()


def _started_at(pid: int) -> float | None:
    """When process ``pid`` started (Linux /proc), or None when unknown."""
    if _BOOT is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # the command name may hold spaces and parentheses
    try:
        return _BOOT + int(fields[19]) / _CLK_TCK
    except (IndexError, ValueError):
        return None


def writer_alive(pid: int, written_at: float) -> bool:
    """Whether the process that wrote a temp (its PID, the temp's mtime) may still be running."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    except OSError:
        return True
    started = _started_at(pid)
    return started is None or started <= written_at + 1.0  # 1 s: btime and clock ticks are coarse


def _remove(path: Path) -> bool:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
        return True
    except FileNotFoundError:
        return True
    except OSError as exc:
        log.warning("could not remove the stale temporary %s: %s", path, exc)
        return False


def _is_stale(entry: os.DirEntry, now: float, min_age_s: float, any_writer: bool) -> bool:
    match = TEMP_RE.match(entry.name)
    if match is None and not (any_writer and LEGACY_RE.match(entry.name)):
        return False
    try:
        mtime = entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        return False
    if any_writer:  # the caller holds the lock that every writer of this folder takes
        return match is None or int(match["pid"]) != os.getpid()
    return now - mtime >= min_age_s and not writer_alive(int(match["pid"]), mtime)


def _scan(folder: Path, depth: int, now: float, min_age_s: float, any_writer: bool, removed: list[Path]) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if _is_stale(entry, now, min_age_s, any_writer):
            if _remove(Path(entry.path)):
                removed.append(Path(entry.path))
        elif depth > 0 and not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
            _scan(Path(entry.path), depth - 1, now, min_age_s, any_writer, removed)


def clean_stale_temp(data: DataDir, min_age_s: float = DEFAULT_MIN_AGE_S, folder: Path | None = None) -> list[Path]:
    """Remove the temporaries of writers that are gone, in the data directory (down to three
    levels: ``snapshots/<dataset>/``, ``instances/<task>/``, ``artifacts/<run>/``, ``warehouse/``)
    or only in ``folder``; return what was removed. Safe while other writers run (see above)."""
    removed: list[Path] = []
    start = folder if folder is not None else data.root
    _scan(start, 0 if folder is not None else MAX_DEPTH, time.time(), min_age_s, False, removed)
    if removed:
        log.warning("removed %d temporary files left by killed writers: %s", len(removed),
                    ", ".join(str(p.relative_to(data.root)) if p.is_relative_to(data.root) else str(p) for p in removed))
    return removed


def clean_warehouse_temp(data: DataDir) -> list[Path]:
    """Every temp of ``warehouse/`` and the analysts' link temp beside it; only under ``publish_lock``."""
    removed: list[Path] = []
    now = time.time()
    _scan(data.warehouse, 0, now, 0.0, True, removed)
    link_prefix = f".{data.duckdb_link.name}."
    try:
        entries = [e for e in os.scandir(data.root) if e.name.startswith(link_prefix)]
    except OSError:
        entries = []
    for entry in entries:
        if _is_stale(entry, now, 0.0, True) and _remove(Path(entry.path)):
            removed.append(Path(entry.path))
    if removed:
        log.warning("removed %d temporary files of killed publishes: %s", len(removed), ", ".join(p.name for p in removed))
    return removed


@contextlib.contextmanager
def publish_lock(data: DataDir) -> Iterator[bool]:
    """Hold ``warehouse/.publish.lock`` (an exclusive ``flock``, released by the kernel if the holder
    dies) while publishing; yields False, after a warning, where the file system has no locks."""
    import fcntl

    data.warehouse.mkdir(parents=True, exist_ok=True)
    fd = os.open(data.warehouse / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = True
        except OSError as exc:
            log.warning("publishing without a lock (%s): concurrent publishes are not serialised", exc)
            held = False
        yield held
    finally:
        os.close(fd)  # releases the lock


__all__ = ["clean_stale_temp", "clean_warehouse_temp", "publish_lock", "writer_alive"]
