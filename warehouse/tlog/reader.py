"""What the read-only API serves from the log: the checkpoint, pages of entries, and proofs.

Why: the API never holds a key and never writes; it answers from ``<data>/log`` only while that log
verifies (``audit``: every hash recomputed, the checkpoint's signature and key lifetime checked),
and says ``log_unavailable`` otherwise. Auditing is O(n), so a verified view is kept until the
entries, their index or the checkpoint change (size, mtime or inode), and every proof is served
against the verified checkpoint: a reader can always check it with the checkpoint it was given
(docs/transparency-log.md "Routes").
Proofs are built from the hashes the audit recomputed, kept in memory with the view (2n hashes):
no file is read again to answer one.
"""

from __future__ import annotations

import base64
import functools
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from warehouse.tlog.audit import LogIntegrityError, LogState, audit, levels_subtree
from warehouse.tlog.checkpoint import key_hash, split_note
from warehouse.tlog.merkle import consistency_path, inclusion_path, leaf_hash
from warehouse.tlog.store import LogStore

PAGE_MAX = 1000


class LogUnavailable(RuntimeError):
    """The log is missing or does not verify; the message says which."""


@dataclass
class LogView:
    """A verified log, as of the files' state it was verified at; ``memo`` keeps answers built
    from it (callers may keep their encoded bodies there: the view is replaced when a file changes)."""

    store: LogStore
    state: LogState
    memo: dict[Any, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """The verified checkpoint's tree size: what every answer is proved against."""
        return self.state.checkpoint.size if self.state.checkpoint else 0

    def checkpoint_body(self) -> dict[str, Any]:
        cp = self.state.checkpoint
        assert cp is not None
        text, signatures = split_note(cp.note)
        key_id = signature = None
        for name_of_key, life in self.state.keys.items():  # the key under the id the log (and /v1/keys) names it
            if not life.valid_at(cp.size):
                continue
            for name, khash, sig in signatures:
                if name == cp.origin and khash == key_hash(cp.origin, life.public_key):
                    key_id, signature = name_of_key, base64.b64encode(sig).decode()
                    break
            if key_id:
                break
        return {"tree_size": cp.size, "root_hash": cp.root.hex(), "key_id": key_id, "signature": signature,
                "note": cp.note, "origin": cp.origin}

    def entries_body(self, start: int, end: int | None) -> dict[str, Any]:
        """Entries ``[start, end)`` of the checkpointed log, at most ``PAGE_MAX`` (``ValueError``
        when the range is not within it)."""
        end = min(self.size, start + PAGE_MAX) if end is None else end
        if not 0 <= start <= end <= self.size or end - start > PAGE_MAX:
            raise ValueError(f"entries need 0 <= start <= end <= {self.size} (the checkpoint's tree size) and at most "
                             f"{PAGE_MAX} per page; got start={start} end={end}")
        rows = []
        for index, entry in enumerate(self.store.entries(start, end), start=start):
            body = _parsed(entry)
            rows.append({"index": index, "type": body["type"], "id": body["id"], "entry": entry.decode(),
                         "leaf_hash": leaf_hash(entry).hex()})
        return {"start": start, "end": end, "tree_size": self.size, "entries": rows}

    def proof_body(self, kind: str, entry_id: str) -> dict[str, Any] | None:
        """The inclusion proof of the ``kind`` entry ``entry_id`` against the checkpoint, or None
        when the checkpointed log holds no such entry."""
        index = self.state.positions.get((kind, entry_id))
        if index is None or index >= self.size:
            return None
        entry = self.store.entry(index)
        return {"leaf_index": index, "tree_size": self.size, "leaf_hash": leaf_hash(entry).hex(),
                "entry": entry.decode(),
                "hashes": [h.hex() for h in inclusion_path(index, self.size, levels_subtree(self.state.levels))],
                "checkpoint": self.checkpoint_body()}

    def consistency_body(self, first: int, second: int | None) -> dict[str, Any]:
        second = self.size if second is None else second
        if not 0 < first <= second <= self.size:
            raise ValueError(f"consistency needs 0 < from <= to <= {self.size} (the checkpoint's tree size); got "
                             f"from={first} to={second}")
        path = consistency_path(first, second, levels_subtree(self.state.levels))
        return {"from": first, "to": second, "hashes": [h.hex() for h in path]}


def _parsed(entry: bytes) -> dict[str, Any]:
    return msgspec.json.decode(entry)


_cache: dict[Path, tuple[tuple, LogView | str]] = {}
_lock = threading.Lock()


def _stamp(store: LogStore) -> tuple:
    """The state of the files answers are read from. The hash files are not among them: proofs come
    from the hashes the audit recomputed from the entries; the publisher's audit checks those files."""
    stamps = []
    for path in (store.entries_path, store.index_path, store.checkpoint_path):
        try:
            st = path.stat()
            stamps.append((path.name, st.st_size, st.st_mtime_ns, st.st_ino))
        except FileNotFoundError:
            stamps.append((path.name, None))
    return tuple(stamps)


@functools.lru_cache(maxsize=64)
def _paths_of(data_root: Path | str) -> tuple[tuple[str, str], ...]:
    store = LogStore.of_data(data_root)
    return tuple((p.name, str(p)) for p in (store.entries_path, store.index_path, store.checkpoint_path))


def log_stamp(data_root: Path | str) -> tuple:
    """The state of the files a verified view is made from: answers made from a view are the same
    while it is unchanged (``api.answer_cache`` replays the proof routes on it, so it is called on
    every replay: the store's paths are worked out once per data directory)."""
    stamps = []
    for name, path in _paths_of(data_root):
        try:
            st = os.stat(path)
            stamps.append((name, st.st_size, st.st_mtime_ns, st.st_ino))
        except FileNotFoundError:
            stamps.append((name, None))
    return tuple(stamps)


def open_view(data_root: Path | str) -> LogView:
    """The verified log of a data directory; ``LogUnavailable`` when it has none or it does not verify."""
    store = LogStore.of_data(data_root)
    stamp = _stamp(store)
    with _lock:
        found = _cache.get(store.dir)
        if found is None or found[0] != stamp:
            try:
                state = audit(store)
                found = (stamp, LogView(store, state) if state.checkpoint else
                         f"this data directory has no transparency log yet ({store.dir})")
            except LogIntegrityError as exc:
                found = (stamp, str(exc))
            _cache[store.dir] = found
    if isinstance(found[1], str):
        raise LogUnavailable(found[1])
    return found[1]


__all__ = ["PAGE_MAX", "LogUnavailable", "LogView", "log_stamp", "open_view"]
