"""The log on disk: an append-only entry file, an offset index, and the hashes of every full subtree.

Why: a proof must cost O(log n) reads, not a rebuild of the tree, and an append O(log n) writes.
Layout of ``<data>/log/`` (docs/transparency-log.md "On disk"):

- ``entries.jsonl``: the entries in log order, one per line; a leaf's bytes are its line without
  the ``\\n`` (canonical JSON never holds a raw newline). The only file a backup needs: every
  other one is derived from it (``rebuild``).
- ``entries.idx``: for entry i, the 8-byte big-endian offset just past its line, so entry i is
  ``entries.jsonl[idx[i-1]:idx[i]-1]`` (``idx[-1] = 0``). Its length / 8 is the tree size.
- ``hashes/level-NN`` (NN = 00, 01, ...): the 32-byte hashes of the full, aligned subtrees of
  2^NN leaves, in order: record j of level k is MTH of leaves ``[j*2^k, (j+1)*2^k)``. Level 00
  holds the leaf hashes; a file of level k holds ``size >> k`` records.
- ``checkpoint``: the latest signed checkpoint (``warehouse.tlog.checkpoint``).

Appending writes the entry lines, then the index, then the new hashes (each leaf adds one record to
level 00 and, while its position is odd at a level, one to the level above), each file fsynced.
A crash part-way leaves files of mismatched lengths, which ``check_shape`` finds; ``rebuild``
re-derives the index and hashes from ``entries.jsonl``. MTH of any range the RFC's recursion asks
for is read from O(log n) of these records (``subtree``).

Its file name is shared on purpose: each store package has its own records, store and tables
modules, named alike.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

from medbench.files import PUBLIC_FILE, atomic_path
from warehouse.tlog.merkle import EMPTY_ROOT, HASH_SIZE, consistency_path, inclusion_path, leaf_hash, node_hash

OFFSET = struct.Struct(">Q")


class LogShapeError(RuntimeError):
    """The log's files disagree in length (an interrupted append, or files edited or lost)."""


class LogStore:
    def __init__(self, directory: Path | str):
        self.dir = Path(directory)
        self.entries_path = self.dir / "entries.jsonl"
        self.index_path = self.dir / "entries.idx"
        self.hashes_dir = self.dir / "hashes"
        self.checkpoint_path = self.dir / "checkpoint"

    @classmethod
    def of_data(cls, data_root: Path | str) -> LogStore:
        return cls(Path(data_root) / "log")

    # -- reading -------------------------------------------------------------------------
    def size(self) -> int:
        try:
            return self.index_path.stat().st_size // OFFSET.size
        except FileNotFoundError:
            return 0

    def level_path(self, level: int) -> Path:
        return self.hashes_dir / f"level-{level:02d}"

    def _offset(self, fd: int, i: int) -> int:
        return 0 if i < 0 else OFFSET.unpack(os.pread(fd, OFFSET.size, i * OFFSET.size))[0]

    def entries(self, start: int, end: int) -> list[bytes]:
        """Entries ``[start, end)`` as their leaf bytes."""
        if not 0 <= start <= end <= self.size():
            raise IndexError(f"entries {start}..{end} are outside a log of {self.size()}")
        if start == end:
            return []
        with _open(self.index_path) as idx, _open(self.entries_path) as body:
            offsets = [self._offset(idx, i) for i in range(start - 1, end)]
            blob = os.pread(body, offsets[-1] - offsets[0], offsets[0])
        lines = [blob[a - offsets[0]:b - offsets[0]] for a, b in zip(offsets, offsets[1:])]
        if any(not line.endswith(b"\n") for line in lines) or len(blob) != offsets[-1] - offsets[0]:
            raise LogShapeError(f"{self.entries_path} does not match its index {self.index_path}")
        return [line[:-1] for line in lines]

    def entry(self, i: int) -> bytes:
        return self.entries(i, i + 1)[0]

    def iter_entries(self, batch: int = 4096) -> Iterator[bytes]:
        """Every entry, read straight from ``entries.jsonl`` (not through the index)."""
        try:
            with self.entries_path.open("rb") as f:
                for line in f:
                    yield line[:-1] if line.endswith(b"\n") else line
        except FileNotFoundError:
            return

    def stored_hash(self, level: int, position: int) -> bytes:
        with _open(self.level_path(level)) as fd:
            found = os.pread(fd, HASH_SIZE, position * HASH_SIZE)
        if len(found) != HASH_SIZE:
            raise LogShapeError(f"{self.level_path(level)} lacks record {position}")
        return found

    def hasher(self) -> Subtrees:
        """A memoising ``subtree(start, end)`` over the stored hashes (one per proof or root)."""
        return Subtrees(self)

    def root(self, size: int | None = None) -> bytes:
        size = self.size() if size is None else size
        return EMPTY_ROOT if size == 0 else self.hasher()(0, size)

    def inclusion(self, index: int, size: int) -> list[bytes]:
        return inclusion_path(index, size, self.hasher())

    def consistency(self, first: int, second: int) -> list[bytes]:
        return consistency_path(first, second, self.hasher())

    def check_shape(self) -> int:
        """The tree size when every file's length agrees with the index; ``LogShapeError`` otherwise."""
        n = self.size()
        if self.index_path.exists() and self.index_path.stat().st_size % OFFSET.size:
            raise LogShapeError(f"{self.index_path} is not a whole number of offsets")
        end = 0
        if n:
            with _open(self.index_path) as idx:
                end = self._offset(idx, n - 1)
        body = self.entries_path.stat().st_size if self.entries_path.exists() else 0
        if body != end:
            raise LogShapeError(f"{self.entries_path} holds {body} bytes but its index ends at {end}")
        level = 0
        while (n >> level) or self.level_path(level).exists():
            have = self.level_path(level).stat().st_size if self.level_path(level).exists() else 0
            if have != (n >> level) * HASH_SIZE:
                raise LogShapeError(f"{self.level_path(level)} holds {have // HASH_SIZE} hashes, not {n >> level}")
            level += 1
        return n

    # -- writing -------------------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One writer at a time (an advisory lock on ``<log>/LOCK``)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with (self.dir / "LOCK").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def append(self, entries: Sequence[bytes]) -> int:
        """Append ``entries`` (leaf bytes, no newline inside) and their hashes; the new tree size.
        Call under ``locked()`` after the log was verified."""
        n = self.check_shape()
        if any(b"\n" in e or not e for e in entries):
            raise ValueError("a log entry is non-empty and holds no newline")
        self.hashes_dir.mkdir(parents=True, exist_ok=True)
        with _open(self.index_path) if n else contextlib.nullcontext(-1) as idx:
            end = self._offset(idx, n - 1) if n else 0
        lines, offsets = [], []
        for e in entries:
            lines.append(e + b"\n")
            end += len(e) + 1
            offsets.append(OFFSET.pack(end))
        pending: dict[int, list[bytes]] = {}

        def read(level: int, position: int) -> bytes:
            base = n >> level
            return self.stored_hash(level, position) if position < base else pending[level][position - base]

        for i, e in enumerate(entries, start=n):
            pending.setdefault(0, []).append(leaf_hash(e))
            level, position = 0, i
            while position & 1:
                parent = node_hash(read(level, position - 1), read(level, position))
                level, position = level + 1, position >> 1
                pending.setdefault(level, []).append(parent)
        _append_file(self.entries_path, b"".join(lines))
        _append_file(self.index_path, b"".join(offsets))
        for level, hashes in sorted(pending.items()):
            _append_file(self.level_path(level), b"".join(hashes))
        return n + len(entries)

    def write_checkpoint(self, note: str) -> None:
        with atomic_path(self.checkpoint_path, mode=PUBLIC_FILE) as tmp:
            tmp.write_text(note, encoding="utf-8")

    def read_checkpoint(self) -> str | None:
        try:
            return self.checkpoint_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def rebuild(self) -> int:
        """Re-derive ``entries.idx`` and every ``hashes/level-NN`` from ``entries.jsonl`` (after a
        restore from a backup or a replica, or an interrupted append); the tree size. A last line
        without its newline (a torn write) is dropped from the entry file."""
        with self.locked():
            raw = self.entries_path.read_bytes() if self.entries_path.exists() else b""
            if raw and not raw.endswith(b"\n"):
                raw = raw[:raw.rfind(b"\n") + 1]
                with atomic_path(self.entries_path, mode=PUBLIC_FILE) as tmp:
                    tmp.write_bytes(raw)
            lines = raw.split(b"\n")[:-1]
            offsets, end = [], 0
            for line in lines:
                end += len(line) + 1
                offsets.append(OFFSET.pack(end))
            levels = [[leaf_hash(line) for line in lines]]
            while len(levels[-1]) > 1:
                below = levels[-1]
                levels.append([node_hash(below[j], below[j + 1]) for j in range(0, len(below) - 1, 2)])
            self.hashes_dir.mkdir(parents=True, exist_ok=True)
            with atomic_path(self.index_path, mode=PUBLIC_FILE) as tmp:
                tmp.write_bytes(b"".join(offsets))
            for stale in self.hashes_dir.glob("level-*"):
                stale.unlink()
            for level, hashes in enumerate(levels):
                if hashes:
                    with atomic_path(self.level_path(level), mode=PUBLIC_FILE) as tmp:
                        tmp.write_bytes(b"".join(hashes))
            return len(lines)


class Subtrees:
    """``subtree(start, end)`` -> MTH of leaves ``[start, end)``, from the stored full-subtree
    hashes. A range RFC 6962's recursion asks for is cut into full aligned subtrees (one stored
    record each) and folded; results are memoised, so a proof's one partial subtree per level
    is read once: O(log n) reads in all."""

    def __init__(self, store: LogStore):
        self.store = store
        self.memo: dict[tuple[int, int], bytes] = {}

    def __call__(self, start: int, end: int) -> bytes:
        found = self.memo.get((start, end))
        if found is not None:
            return found
        n = end - start
        if n <= 0:
            raise ValueError(f"empty range {start}..{end}")
        if n & (n - 1) == 0 and start % n == 0:
            found = self.store.stored_hash(n.bit_length() - 1, start // n)
        else:
            k = 1 << ((n - 1).bit_length() - 1)
            found = node_hash(self(start, start + k), self(start + k, end))
        self.memo[(start, end)] = found
        return found


@contextlib.contextmanager
def _open(path: Path) -> Iterator[int]:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise LogShapeError(f"{path} is missing") from None
    try:
        yield fd
    finally:
        os.close(fd)


def _append_file(path: Path, payload: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PUBLIC_FILE)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["LogShapeError", "LogStore", "Subtrees"]
