"""A reuse store that cannot be written is logged once (then a reminder at most every few minutes,
and once when it recovers), not at every flush.

Issue #22: with a read-only ``state/`` the server logged "could not write the reuse store" every
second, forever. The store is made read-only here through SQLite itself (a ``mode=ro`` connection on
the same file, which fails each write with SQLite's "attempt to write a readonly database", as a
read-only folder or file does): the tests also run as root, which ignores permission bits. The
flush interval is shortened and cycles are counted (the test waits for flushes, never for time).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from api import reuse
from api.reuse import ReuseCounter, flush_every

MESSAGES = ("could not write the reuse store", "still cannot write the reuse store", "is writable again")


class Clock:
    """A monotonic clock the test moves by hand (the reminder interval is minutes)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_read_only(counter: ReuseCounter) -> sqlite3.Connection:
    writable = counter._writer
    counter._writer = sqlite3.connect(f"file:{counter.path}?mode=ro", uri=True, isolation_level=None,
                                      check_same_thread=False)
    return writable


async def run_flushes(counter: ReuseCounter, cycles: int, clock: Clock | None = None, step_s: float = 0.0,
                      before: Callable[[int], None] | None = None, **options: object) -> None:
    """Let one ``flush_every`` task (every 1 ms) run ``cycles`` flushes; before each, a reuse is added,
    ``step_s`` passes on ``clock`` (when given) and ``before(n)`` is called (n = 1, 2, ...)."""
    done = threading.Event()
    calls = 0
    flush = counter.flush

    def counting_flush() -> bool:
        nonlocal calls
        calls += 1
        if before is not None:
            before(calls)
        if clock is not None:
            clock.now += step_s
        counter.add()
        try:
            return flush()
        finally:
            if calls >= cycles:
                done.set()

    counter.flush = counting_flush  # type: ignore[method-assign]
    if clock is not None:
        options["clock"] = clock
    task = asyncio.create_task(flush_every(counter, 0.001, **options))
    try:
        while not done.is_set() and not task.done():
            await asyncio.sleep(0.001)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task  # also raises whatever ended the flusher early
        counter.flush = flush  # type: ignore[method-assign]


def stored(counter: ReuseCounter) -> int:
    with sqlite3.connect(f"file:{counter.path}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT n FROM reuses WHERE id = 1").fetchone()[0]


def store_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == reuse.__name__ and any(m in r.getMessage() for m in MESSAGES)]


def test_a_read_only_store_is_logged_once_then_its_recovery(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "data").mkdir()
    counter = ReuseCounter(tmp_path / "data" / "state" / reuse.STORE_NAME)
    writable = make_read_only(counter)
    seen: dict[str, int] = {}

    def before(n: int) -> None:
        if n == 31:  # 30 failing flushes (the default reminder interval is minutes), then writable again
            seen["count"], seen["stored"] = counter.count, stored(counter)
            counter._writer.close()
            counter._writer = writable

    caplog.set_level(logging.WARNING, logger=reuse.__name__)
    asyncio.run(run_flushes(counter, 35, before=before))
    lines = store_lines(caplog)
    assert len(lines) == 2, lines
    assert "could not write the reuse store" in lines[0] and "readonly" in lines[0], lines
    assert "is writable again" in lines[1], lines
    assert seen == {"count": 30, "stored": 0}  # kept in memory, still counted while failing
    assert stored(counter) == 35  # nothing lost
    counter.close()


def test_a_lasting_failure_is_reminded_at_most_every_repeat_interval(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "data").mkdir()
    counter = ReuseCounter(tmp_path / "data" / "state" / reuse.STORE_NAME)
    make_read_only(counter)
    clock = Clock()
    caplog.set_level(logging.WARNING, logger=reuse.__name__)
    # 100 flushes 15 s apart (25 min) with a 10 min reminder: the first line, then 2 reminders
    asyncio.run(run_flushes(counter, 100, clock, step_s=15.0, repeat_s=600.0))
    lines = store_lines(caplog)
    assert len(lines) == 3, lines
    assert all("still cannot write" in line for line in lines[1:]), lines
    counter._writer.close()
    counter._writer = None
    counter.close()
