"""Checking a stored log end to end, and the key lifetimes it defines.

Why: the release log could be edited, truncated or given a duplicate id unnoticed
(docs/transparency-log.md "No quiet rewrites"). ``audit`` re-reads every entry and recomputes every
hash, so it finds:

- an edited entry (its leaf hash no longer matches the stored hashes, or, with the hashes
  rebuilt too, the root no longer matches a signed checkpoint);
- a truncated log, even with its checkpoint truncated together, when a checkpoint kept elsewhere
  (the publisher's copy beside its key, or a reader's) is larger;
- a log that forks from a kept checkpoint (same size or larger, another root);
- a duplicated id, a malformed entry, a rotation not signed by both keys;
- a checkpoint signed by a key the log had retired at its size, or had not introduced yet.

Key lifetimes are positions: a key introduced by the rotation entry at index i and retired by the
one at index j may sign checkpoints of sizes ``i < size <= j`` (a checkpoint of size j does not yet
hold the rotation). So a retired key cannot sign a checkpoint of any log that holds its retirement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from warehouse.tlog.checkpoint import Checkpoint, CheckpointError, parse_checkpoint, verify_checkpoint
from warehouse.tlog.entries import EntryError, parse_entry, rotation_keys
from warehouse.tlog.merkle import EMPTY_ROOT, leaf_hash, node_hash
from warehouse.tlog.store import LogShapeError, LogStore


class LogIntegrityError(RuntimeError):
    """The stored log does not verify; the message says what is wrong and what to do."""


@dataclass
class KeyLife:
    public_key: bytes
    introduced: int  # index of its rotation entry
    retired: int | None = None  # index of the rotation entry that replaced it

    def valid_at(self, size: int) -> bool:
        return self.introduced < size and (self.retired is None or size <= self.retired)


@dataclass
class LogState:
    """What a verified log holds: its size, checkpoint, where each id is, and its keys' lifetimes."""

    size: int
    checkpoint: Checkpoint | None
    positions: dict[tuple[str, str], int] = field(default_factory=dict)  # (type, id) -> its latest leaf index
    keys: dict[str, KeyLife] = field(default_factory=dict)  # key_id -> lifetime
    active_key: str | None = None
    unique: dict[tuple, int] = field(default_factory=dict)  # unique_key(entry) -> leaf index
    levels: list[list[bytes]] = field(default_factory=list, repr=False)  # the recomputed full-subtree hashes

    def keys_valid_at(self, size: int) -> list[bytes]:
        return [k.public_key for k in self.keys.values() if k.valid_at(size)]


def unique_key(body: dict) -> tuple:
    """What may appear once in a log: a release, withdrawal or key by its id; a result by its id and
    record hash (a result re-recorded under its run id, e.g. rerun with ``--force``, is a new entry;
    ``positions`` then names the latest)."""
    if body["type"] == "result":
        return body["type"], body["id"], body["record_sha256"]
    return body["type"], body["id"]


def key_lifetimes(entries: Iterable[dict]) -> tuple[dict[str, KeyLife], str | None]:
    """key_id -> lifetime from the parsed entries in log order, and the active key's id.
    ``EntryError`` when a rotation does not start from the active key."""
    keys: dict[str, KeyLife] = {}
    active: str | None = None
    for index, body in enumerate(entries):
        if body["type"] != "key_rotation":
            continue
        old, new = rotation_keys(body)
        old_id = body["old"]["key_id"] if body["old"] else None
        if old_id != active:
            raise EntryError(f"key rotation {body['id']} at entry {index} starts from key {old_id}, but the log's "
                             f"key then was {active}")
        if old_id is not None:
            keys[old_id].retired = index
        keys[body["id"]] = KeyLife(new, index)
        active = body["id"]
    return keys, active


def verify_against(state: LogState, store: LogStore, note: str, origin: str, hashes: list[list[bytes]] | None = None,
                   what: str = "checkpoint") -> Checkpoint:
    """``note`` verified as a checkpoint of this log: signed by a key valid at its size, and its root
    equal to the log's root at that size. ``LogIntegrityError`` otherwise."""
    try:
        claimed = parse_checkpoint(note)
    except CheckpointError as exc:
        raise LogIntegrityError(f"the {what} is malformed ({exc})") from None
    if claimed.size > state.size:
        raise LogIntegrityError(f"the log holds {state.size} entries but the {what} has {claimed.size}: the log was "
                                "truncated; restore it from a backup or a replica (docs/transparency-log.md)")
    try:
        checkpoint, _ = verify_checkpoint(note, origin, state.keys_valid_at(claimed.size))
    except CheckpointError as exc:
        raise LogIntegrityError(f"the {what} does not verify: {exc}") from None
    root = _root_from_levels(hashes, claimed.size) if hashes is not None else store.root(claimed.size)
    if root != checkpoint.root:
        raise LogIntegrityError(f"the log's first {claimed.size} entries do not hash to the {what}'s root: the log "
                                "was edited or forked; restore it from a backup or a replica "
                                "(docs/transparency-log.md)")
    return checkpoint


def audit(store: LogStore, origin: str | None = None, kept: str | None = None, kept_name: str = "kept checkpoint",
          require_checkpoint: bool = True) -> LogState:
    """The log verified from its first entry (see the module docstring); ``LogIntegrityError``
    with one line saying what is wrong. ``origin`` None takes the stored checkpoint's origin;
    ``kept`` is a checkpoint kept outside the data directory, which the log must extend."""
    try:
        size = store.check_shape()
        parsed, hashes = _read_all(store, size)
    except (LogShapeError, OSError) as exc:
        raise LogIntegrityError(f"the log's files disagree ({exc}); rebuild its index with `rebuild` after restoring "
                                "entries.jsonl (docs/transparency-log.md)") from None
    except EntryError as exc:
        raise LogIntegrityError(f"the log holds an invalid entry: {exc}") from None
    positions: dict[tuple[str, str], int] = {}
    unique: dict[tuple, int] = {}
    for index, body in enumerate(parsed):
        key = unique_key(body)
        if key in unique:
            raise LogIntegrityError(f"{body['type']} id {body['id']} appears twice in the log (entries {unique[key]} "
                                    f"and {index}): the log was edited; restore it from a backup or a replica")
        unique[key] = positions[(body["type"], body["id"])] = index
    try:
        keys, active = key_lifetimes(parsed)
    except EntryError as exc:
        raise LogIntegrityError(f"the log's key rotations do not chain: {exc}") from None
    state = LogState(size, None, positions, keys, active, unique, hashes)
    note = store.read_checkpoint()
    if note is None:
        if size and require_checkpoint:
            raise LogIntegrityError(f"the log holds {size} entries but no checkpoint ({store.checkpoint_path}); "
                                    "restore it from a backup or a replica")
    else:
        try:
            origin = origin or parse_checkpoint(note).origin
        except CheckpointError as exc:
            raise LogIntegrityError(f"the log's checkpoint is malformed ({exc})") from None
        state.checkpoint = verify_against(state, store, note, origin, hashes, "log's checkpoint")
    if kept is not None:
        if origin is None:
            try:
                origin = parse_checkpoint(kept).origin
            except CheckpointError as exc:
                raise LogIntegrityError(f"the {kept_name} is malformed ({exc})") from None
        kept_cp = verify_against(state, store, kept, origin, hashes, kept_name)
        if state.checkpoint is None or state.checkpoint.size < kept_cp.size:
            raise LogIntegrityError(f"the log's checkpoint ({state.checkpoint.size if state.checkpoint else 'none'}) "
                                    f"is older than the {kept_name} ({kept_cp.size}): it was rolled back; restore "
                                    "the log from a backup or a replica")
    return state


def _read_all(store: LogStore, size: int) -> tuple[list[dict], list[list[bytes]]]:
    """Every entry parsed and every stored hash compared with the recomputed one."""
    parsed: list[dict] = []
    leaves: list[bytes] = []
    for i, entry in enumerate(store.iter_entries()):
        parsed.append(parse_entry(entry))
        leaves.append(leaf_hash(entry))
    if len(leaves) != size:
        raise LogShapeError(f"entries.jsonl holds {len(leaves)} lines but the index {size}")
    levels = [leaves]
    while len(levels[-1]) > 1:
        below = levels[-1]
        levels.append([node_hash(below[j], below[j + 1]) for j in range(0, len(below) - 1, 2)])
    for level, hashes in enumerate(levels):
        if not hashes:
            continue
        stored = store.level_path(level).read_bytes()
        computed = b"".join(hashes)
        if stored != computed:
            first = next(j for j in range(len(hashes)) if stored[j * 32:(j + 1) * 32] != hashes[j])
            where = f"entry {first}" if level == 0 else f"the subtree at level {level}, position {first}"
            raise LogShapeError(f"the stored hash of {where} does not match the entries: the log was edited")
    return parsed, levels


def levels_subtree(levels: list[list[bytes]]) -> Callable[[int, int], bytes]:
    """``subtree(start, end)`` -> MTH of leaves ``[start, end)`` from in-memory full-subtree levels
    (what ``audit`` recomputed: the API proves from them without reading the files again)."""
    def mth(start: int, end: int) -> bytes:
        n = end - start
        if n & (n - 1) == 0 and start % n == 0:
            return levels[n.bit_length() - 1][start // n]
        k = 1 << ((n - 1).bit_length() - 1)
        return node_hash(mth(start, start + k), mth(start + k, end))

    return mth


def _root_from_levels(levels: list[list[bytes]], size: int) -> bytes:
    """MTH of the first ``size`` leaves from in-memory full-subtree levels."""
    return EMPTY_ROOT if size == 0 else levels_subtree(levels)(0, size)


__all__ = ["KeyLife", "LogIntegrityError", "LogState", "audit", "key_lifetimes", "levels_subtree", "unique_key",
           "verify_against"]
