"""One evaluation at a time per partition: an exclusive file lock per run id in the data directory.

Why: two ``medbench materialize --model medbench/tiny-llama`` started two seconds apart both
generated all 1,045 items (2,090 lines in one raw-output file), and both wrote result.json and
published. The lock is taken by the engine's own steps (``make_predictions``, ``compute_metrics``),
not by a launcher, so it holds however a run is started: the CLI, the UI, the daemon, or workers on
other machines that share the data directory (``flock`` on NFSv4 and most cluster file systems).
The kernel releases it when its holder dies, so a killed run never leaves a partition locked.

The lock file (``locks/<run_id>.lock``) holds its current holder's host and pid, so that whoever
waits can say for whom; it is never removed (removing a lock file races with a new taker).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from warehouse.layout import DataDir

Log = Callable[[str], None]


@dataclass(frozen=True)
class Held:
    """A held lock: whether its taker had to wait, and since when (``time.time()``)."""

    path: Path
    waited: bool
    asked_at: float


def lock_path(data: DataDir, run_id: str) -> Path:
    return data.root / "locks" / f"{run_id}.lock"


def _holder(path: Path) -> dict | None:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
        return info if {"host", "pid", "since"} <= set(info) else None
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _alive_here(info: dict) -> bool:
    """Whether the holder the file names is a live process (always true for another host's)."""
    if info["host"] != socket.gethostname():
        return True
    try:
        os.kill(int(info["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError):
        return True
    return True


def holder_text(path: Path, settle_s: float = 2.0) -> str:
    """Who holds the lock, as the lock file says.

    Why the wait: a new holder takes the lock, then writes its name, so for a moment the file still
    names the last (finished) holder or nothing. A name is trusted once its process is alive.
    """
    deadline = time.monotonic() + settle_s
    while True:
        info = _holder(path)
        if info is not None and _alive_here(info):
            return f"host {info['host']}, pid {info['pid']}, since {info['since']}"
        if time.monotonic() >= deadline:
            return "an unknown holder"
        time.sleep(0.02)


@contextlib.contextmanager
def evaluation_lock(data: DataDir, run_id: str, log: Log) -> Iterator[Held]:
    """Hold ``locks/<run_id>.lock``; when another process holds it, log that and for whom, and wait."""
    path = lock_path(data, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    asked_at = time.time()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        waited = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waited = True
            log(f"run {run_id}: another evaluation of this partition holds {path} ({holder_text(path)}); "
                "waiting for it to finish, then reusing what it made")
            fcntl.flock(fd, fcntl.LOCK_EX)
            log(f"run {run_id}: the other evaluation finished after {time.time() - asked_at:.1f}s")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        payload = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "since": stamp}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, payload, 0)
        yield Held(path, waited, asked_at)
    finally:
        os.close(fd)  # releases the lock


def written_since(path: Path, moment: float) -> bool:
    """Whether ``path`` exists and was last written at or after ``moment`` (``time.time()``)."""
    try:
        return path.stat().st_mtime >= moment
    except OSError:
        return False


def newer(a: Path, b: Path) -> bool:
    """Whether ``a`` was written strictly after ``b`` (both exist)."""
    try:
        return a.stat().st_mtime_ns > b.stat().st_mtime_ns
    except OSError:
        return False
