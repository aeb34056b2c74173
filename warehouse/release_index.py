"""The release history read from disk: an index of the release log, binary-searched with ``pread``.

A server answering ``?release=`` and ``/v1/releases`` used to read the whole release log into memory
(every record, each holding its manifest or delta), so its memory grew with the number of releases.
Now it reads the log through a derived index file, ``releases/releases.idx`` (docs/concepts.md,
"Versions and releases"), written by the publisher after each release is appended:

- a header: a magic, the number of log bytes the index covers (a whole number of lines) and the
  number of records;
- by position: the byte offset of each record's line in the log (8 bytes each), oldest first;
- by id: each release id (padded to ``ID_WIDTH`` bytes) with its position, sorted by id.

Finding a release is a binary search of the sorted section (O(log n) reads of ``BY_ID`` bytes) then
one read of its line; a page of the listing reads its own lines. Lines appended after the index was
written (a publish killed before updating it) are read from the log's tail, which is all that is
held in memory. The index is derived: a missing, damaged or foreign one is rebuilt by the next
publish, and until then a reader falls back to one pass over the log that keeps only offsets.
"""

from __future__ import annotations

import os
import struct
from bisect import insort
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec

from medbench.files import PUBLIC_FILE, atomic_path, open_regular
from medbench.layout import DataDir

MAGIC = b"MBRIDX1\n"
HEADER = struct.Struct(">8sQQ")  # magic, covered log bytes, records
OFFSET = struct.Struct(">Q")
ID_WIDTH = 48
BY_ID = struct.Struct(f">{ID_WIDTH}sQ")  # id (NUL-padded), position


class _Id(msgspec.Struct):
    id: str


def index_path(data: DataDir) -> Path:
    return data.release_log.parent / "releases.idx"


def _lines(fd: int, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of each complete line of the log between ``start`` and ``end``, read in chunks."""
    pending, pending_at, at = b"", start, start
    while at < end:
        chunk = os.pread(fd, min(1 << 20, end - at), at)
        if not chunk:
            break
        at += len(chunk)
        *complete, rest = (pending + chunk).split(b"\n")
        for line in complete:
            yield pending_at, line
            pending_at += len(line) + 1
        pending = rest


def _decode_id(line: bytes) -> str | None:
    try:
        return msgspec.json.decode(line, type=_Id).id
    except msgspec.DecodeError:
        return None


def write_index(data: DataDir) -> None:
    """Bring the index up to the log (the publisher, under its lock, after appending a release): the
    lines after the covered bytes are added; a missing or unreadable index is rebuilt from the log."""
    try:
        fd = open_regular(data.release_log)
    except OSError:
        return
    try:
        size = os.fstat(fd).st_size
        offsets, by_id, covered = _read_all(data)
        if covered > size:
            offsets, by_id, covered = [], [], 0
        for offset, line in _lines(fd, covered, size):
            covered = offset + len(line) + 1
            release_id = _decode_id(line)
            if release_id is None or len(release_id.encode()) > ID_WIDTH:
                continue  # a torn line of a killed publish, skipped as reading does
            insort(by_id, (release_id.encode(), len(offsets)))
            offsets.append(offset)
    finally:
        os.close(fd)
    body = HEADER.pack(MAGIC, covered, len(offsets)) + b"".join(OFFSET.pack(o) for o in offsets)
    body += b"".join(BY_ID.pack(i, p) for i, p in by_id)
    with atomic_path(index_path(data), mode=PUBLIC_FILE) as tmp:
        tmp.write_bytes(body)


def _read_all(data: DataDir) -> tuple[list[int], list[tuple[bytes, int]], int]:
    try:
        raw = index_path(data).read_bytes()
        magic, covered, count = HEADER.unpack_from(raw)
        if magic != MAGIC or len(raw) != HEADER.size + count * (OFFSET.size + BY_ID.size):
            raise ValueError
    except (OSError, ValueError, struct.error):
        return [], [], 0
    offsets = [OFFSET.unpack_from(raw, HEADER.size + i * OFFSET.size)[0] for i in range(count)]
    start = HEADER.size + count * OFFSET.size
    by_id = [BY_ID.unpack_from(raw, start + i * BY_ID.size) for i in range(count)]
    return offsets, [(i.rstrip(b"\0"), p) for i, p in by_id], covered


@dataclass
class History:
    """An open view of the release log: ``len``, ``at(position)``, ``find(id)``; close when done."""

    log_fd: int
    index_fd: int | None
    count_indexed: int
    covered: int
    tail: list[tuple[str, int, int]]  # (id, offset, end) of lines after the covered bytes, oldest first
    fallback: list[tuple[str, int, int]] | None = None  # no usable index: every line's (id, offset, end)

    def __len__(self) -> int:
        if self.fallback is not None:
            return len(self.fallback)
        return self.count_indexed + len(self.tail)

    def _span(self, position: int) -> tuple[int, int]:
        if self.fallback is not None:
            return self.fallback[position][1:]
        if position >= self.count_indexed:
            return self.tail[position - self.count_indexed][1:]
        base = HEADER.size + position * OFFSET.size
        raw = os.pread(self.index_fd, 2 * OFFSET.size, base)
        start = OFFSET.unpack_from(raw)[0]
        end = OFFSET.unpack_from(raw, OFFSET.size)[0] if position + 1 < self.count_indexed else self.covered
        return start, end

    def line(self, position: int) -> bytes:
        start, end = self._span(position)
        return os.pread(self.log_fd, end - start, start).rstrip(b"\n")

    def position_of(self, release_id: str) -> int | None:
        if self.fallback is not None:
            return next((i for i, (rid, _, _) in enumerate(self.fallback) if rid == release_id), None)
        wanted = release_id.encode()
        if len(wanted) <= ID_WIDTH:
            lo, hi = 0, self.count_indexed
            start = HEADER.size + self.count_indexed * OFFSET.size
            while lo < hi:  # O(log n) reads of one entry each
                mid = (lo + hi) // 2
                key, position = BY_ID.unpack(os.pread(self.index_fd, BY_ID.size, start + mid * BY_ID.size))
                key = key.rstrip(b"\0")
                if key == wanted:
                    return position
                lo, hi = (mid + 1, hi) if key < wanted else (lo, mid)
        return next((self.count_indexed + i for i, (rid, _, _) in enumerate(self.tail) if rid == release_id), None)

    def ids(self) -> list[str]:
        """Every release id in log order (the sorted section read once: ``BY_ID`` bytes a release)."""
        if self.fallback is not None:
            return [rid for rid, _, _ in self.fallback]
        start = HEADER.size + self.count_indexed * OFFSET.size
        raw = os.pread(self.index_fd, self.count_indexed * BY_ID.size, start)
        out = [""] * self.count_indexed
        for key, position in BY_ID.iter_unpack(raw):
            out[position] = key.rstrip(b"\0").decode()
        return out + [rid for rid, _, _ in self.tail]

    def close(self) -> None:
        os.close(self.log_fd)
        if self.index_fd is not None:
            os.close(self.index_fd)


def open_history(data: DataDir) -> History | None:
    """The release log opened for reading through its index; None when there is no log."""
    try:
        log_fd = open_regular(data.release_log)
    except OSError:
        return None
    size = os.fstat(log_fd).st_size
    index_fd, count, covered = None, 0, 0
    try:
        index_fd = open_regular(index_path(data))
        magic, covered, count = HEADER.unpack(os.pread(index_fd, HEADER.size, 0))
        if (magic != MAGIC or covered > size
                or os.fstat(index_fd).st_size != HEADER.size + count * (OFFSET.size + BY_ID.size)):
            raise ValueError
    except (OSError, ValueError, struct.error):
        if index_fd is not None:
            os.close(index_fd)
        spans = [(rid, o, o + len(line) + 1) for o, line in _lines(log_fd, 0, size)
                 if (rid := _decode_id(line)) is not None]
        return History(log_fd, None, 0, 0, [], fallback=spans)
    tail = [(rid, o, o + len(line) + 1) for o, line in _lines(log_fd, covered, size)
            if (rid := _decode_id(line)) is not None]
    return History(log_fd, index_fd, count, covered, tail)


__all__ = ["History", "index_path", "open_history", "write_index"]
