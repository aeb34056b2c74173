"""One evaluation at a time per partition: an exclusive file lock per run id in the data directory.

Why: two ``medbench materialize --model medbench/tiny-llama`` started two seconds apart both
generated all 1,045 items (2,090 lines in one raw-output file), and both wrote result.json and
published. The lock is taken by the engine's own steps (``make_predictions``, ``compute_metrics``),
not by a launcher, so it holds however a run is started: the CLI, the UI, the daemon, or workers on
other machines that share the data directory (``flock`` on NFSv4 and most cluster file systems).
The kernel releases it when its holder dies, so a killed run never leaves a partition locked.

The lock file (``locks/<run_id>.lock``) holds its current holder's host and pid, so that whoever
waits can say for whom; it is never removed (removing a lock file races with a new taker).
``exclusive`` is the one way to take such a lock, bounded or not: the launcher's partition lock
(``pipelines/dagster/launch.py``) and the creation of the CLI's Dagster instance
(``pipelines/dagster/cli_instance.py``) use it too.
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

from medbench.layout import DataDir

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


class LockTimeout(TimeoutError):
    """The lock stayed held by another process for longer than its taker would wait."""

    def __init__(self, path: Path, holder: str, waited_s: float):
        super().__init__(f"{path} still held by {holder} after {waited_s:g} s")
        self.path, self.holder, self.waited_s = path, holder, waited_s


@contextlib.contextmanager
def exclusive(path: Path, wait_s: float | None = None, on_wait: Log | None = None,
              poll_s: float = 0.1) -> Iterator[Held]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing), writing this holder's host and pid
    into it. When another process holds it: ``on_wait(holder_text)`` once, then wait, for at most
    ``wait_s`` seconds (``None``: for as long as it takes), else raise ``LockTimeout``.

    Why polling for a bound: ``flock`` has no timeout, and an alarm signal only reaches the main
    thread, while ``medbench materialize`` takes partition locks in worker threads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    asked_at = time.time()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        waited = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waited = True
            holder = holder_text(path)
            if on_wait is not None:
                on_wait(holder)
            if wait_s is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            else:
                deadline = time.monotonic() + max(0.0, wait_s)
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            raise LockTimeout(path, holder, wait_s) from None
                        time.sleep(poll_s)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        payload = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "since": stamp}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, payload, 0)
        yield Held(path, waited, asked_at)
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def evaluation_lock(data: DataDir, run_id: str, log: Log) -> Iterator[Held]:
    """Hold ``locks/<run_id>.lock``; when another process holds it, log that and for whom, and wait."""
    path = lock_path(data, run_id)

    def waiting(holder: str) -> None:
        log(f"run {run_id}: another evaluation of this partition holds {path} ({holder}); "
            "waiting for it to finish, then reusing what it made")

    with exclusive(path, None, waiting) as held:
        if held.waited:
            log(f"run {run_id}: the other evaluation finished after {time.time() - held.asked_at:.1f}s")
        yield held


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
