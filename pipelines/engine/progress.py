"""Progress for long work: items done / total, rate and ETA, reported to whatever logs.

The same object serves the Dagster UI (``context.log.info``) and the CLI (stderr), so a
maintainer sees the same progress lines wherever the work was started.
"""

from __future__ import annotations

import sys
import time
from typing import Callable


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Progress:
    def __init__(self, label: str, total: int, log: Callable[[str], None] | None = None, every_s: float = 2.0):
        self.label = label
        self.total = total
        self.done = 0
        self._log = log or _stderr
        self._every = every_s
        self._start = time.monotonic()
        self._last = 0.0

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._last >= self._every or self.done >= self.total:
            self._last = now
            self._log(self.line(now))

    def line(self, now: float | None = None) -> str:
        elapsed = (now or time.monotonic()) - self._start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        pct = 100.0 * self.done / self.total if self.total else 100.0
        eta = f"{left:.0f}s" if left == left else "?"
        return f"{self.label}: {self.done}/{self.total} ({pct:.0f}%), {rate:.1f}/s, ETA {eta}"
