"""Counting reuses: lookups answered ``evaluated`` and downloads of a predictions file.

The count is the service's one piece of mutable state, so it lives outside the warehouse (which
stays read-only and immutable): in memory, where ``/v1/stats`` sees every increment at once, and in
a small JSON store under the data directory's ``state/`` folder, rewritten atomically (temporary
file + ``os.replace``) every second by a background task and once more at shutdown. A crash loses
at most the last second; a restart loads the stored count and continues from it.

What counts (CONTRACT.md leaves the edges open):
- a GET of ``/v1/lookup`` whose answer is ``evaluated``, including a 304 revalidation (the client
  relied on the result again); a HEAD never counts, nor does ``not_evaluated`` or an error;
- a GET of a predictions file answered 200 once the whole file has been sent, or answered 304;
  a HEAD, an error, or an interrupted download never counts.
One server process per data directory owns the store (the service runs a single worker).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from pathlib import Path

import msgspec

log = logging.getLogger(__name__)

STORE_NAME = "reuses.json"


class ReuseStore(msgspec.Struct):
    reuses: int
    updated_at: str


class ReuseCounter:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._count = self._load()
        self._written = self._count

    @property
    def count(self) -> int:
        return self._count

    def add(self, n: int = 1) -> None:
        with self._lock:
            self._count += n

    def flush(self) -> bool:
        """Write the count if it changed since the last write; True when a write happened."""
        count = self._count
        if count == self._written:
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = msgspec.json.encode(ReuseStore(reuses=count, updated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        self._written = count
        return True

    def _load(self) -> int:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return 0
        try:
            return msgspec.json.decode(raw, type=ReuseStore).reuses
        except msgspec.DecodeError as exc:
            aside = self.path.with_name(f"{self.path.name}.unreadable-{int(time.time())}")
            os.replace(self.path, aside)
            log.warning("reuse store %s was unreadable (%s); moved it to %s and started from 0", self.path, exc, aside)
            return 0


async def flush_every(counter: ReuseCounter, seconds: float) -> None:
    """Background task: flush the counter every ``seconds`` until cancelled."""
    while True:
        await asyncio.sleep(seconds)
        try:
            counter.flush()
        except OSError as exc:
            log.warning("could not write the reuse store %s (will retry): %s", counter.path, exc)
