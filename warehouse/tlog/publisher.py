"""The publisher's side of the log: append entries and sign a checkpoint, only onto a log that verifies.

Why: no quiet rewrites (docs/transparency-log.md "No quiet rewrites"). Before appending, the whole
log is audited against the publisher's own copy of its last checkpoint, kept *outside* the data
directory, beside the signing key: whoever edits, truncates (log and in-directory checkpoint
together) or forks the data directory cannot also roll back that copy, and the next publish refuses
with one line saying what to do. After appending, the new checkpoint is written to both places.

Where the kept copy lives: ``MEDBENCH_LOG_CHECKPOINT`` when set, else beside the key, one file per
data directory (one key may sign for several: the tests' key, or a maintainer's demo directories):
``<key file without its suffix>.checkpoints/<first 16 hex of sha256(data directory path)>.checkpoint``.
It must lie outside the data directory. A data directory published from a new path starts a new
kept copy (the publisher says so), so keep ``MEDBENCH_DATA`` fixed or set ``MEDBENCH_LOG_CHECKPOINT``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medbench.files import atomic_path
from warehouse.tlog.audit import LogIntegrityError, LogState, audit, unique_key
from warehouse.tlog.checkpoint import Checkpoint, sign_checkpoint
from warehouse.tlog.entries import parse_entry, rotation_entry
from warehouse.tlog.signer import NoteSigner
from warehouse.tlog.store import LogStore

KEPT_ENV = "MEDBENCH_LOG_CHECKPOINT"


def kept_checkpoint_path(data_root: Path | str, key_path: Path | str | None) -> Path:
    """Where the publisher keeps its copy of the last checkpoint (see the module docstring)."""
    configured = os.environ.get(KEPT_ENV)
    if configured:
        path = Path(configured).expanduser().resolve()
    elif key_path is not None:
        key = Path(key_path).expanduser().resolve()
        folder = hashlib.sha256(str(Path(data_root).resolve()).encode()).hexdigest()[:16]
        path = key.with_name(key.stem + ".checkpoints") / f"{folder}.checkpoint"
    else:
        raise LogIntegrityError(f"no place to keep the log's checkpoint: set {KEPT_ENV} to a file outside the data "
                                "directory")
    if path.is_relative_to(Path(data_root).resolve()):
        raise LogIntegrityError(f"the kept checkpoint {path} lies inside the data directory {data_root}, which can be "
                                f"rolled back with it; set {KEPT_ENV} to a file outside it")
    return path


def read_kept(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _write_kept(path: Path, note: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with atomic_path(path, mode=0o600) as tmp:
        tmp.write_text(note, encoding="utf-8")


_AUDITED: dict[str, Any] = {}  # the last audit of this process: its files' identity -> its state


def _files_key(store: LogStore, origin: str, kept_path: Path) -> tuple | None:
    """Every file of the log's folder and the kept checkpoint, by inode, size and modification time."""
    try:
        with os.scandir(store.dir) as entries:
            found = sorted((e.name, e.inode(), (st := e.stat()).st_size, st.st_mtime_ns) for e in entries)
        kept = os.stat(kept_path)
        return (str(store.dir), origin, str(kept_path), kept.st_ino, kept.st_size, kept.st_mtime_ns, tuple(found))
    except OSError:
        return None


def verify_for_append(store: LogStore, origin: str, kept_path: Path) -> LogState:
    """The log audited against the kept checkpoint, its origin checked; ``LogIntegrityError`` if not.
    A publish audits before it starts and again, under the log's lock, before appending: the second
    reuses the first's state (once: the audit after it starts afresh) when no file of the log nor the
    kept checkpoint changed in between, so a publish reads and hashes the whole log once, not twice (docs/benchmarks.md, "Publishing at scale")."""
    key = _files_key(store, origin, kept_path)
    last = dict(_AUDITED)
    _AUDITED.clear()  # one reuse at most: the next publish audits afresh
    if key is not None and last.get("key") == key:
        return last["state"]
    state = audit(store, origin, read_kept(kept_path), f"checkpoint kept at {kept_path}")
    if state.checkpoint is not None and state.checkpoint.origin != origin:
        raise LogIntegrityError(f"the log's origin is {state.checkpoint.origin!r}, not {origin!r}: a log keeps its "
                                "origin for ever (set MEDBENCH_LOG_ORIGIN back)")
    if key is not None:
        _AUDITED.update(key=key, state=state)
    return state


def is_active(state: LogState, signer: NoteSigner) -> bool:
    """Whether ``signer`` holds the log's active key (compared by public key: the log names a key by
    the id it was published under when it took over)."""
    life = state.keys.get(state.active_key) if state.active_key is not None else None
    return life is not None and life.public_key == signer.public_key


def append(store: LogStore, entries: Sequence[bytes], signer: NoteSigner, origin: str, kept_path: Path) -> Checkpoint:
    """Append the entries the log lacks and sign a checkpoint with ``signer`` (written in the log and
    at ``kept_path``). An entry already in the log with the same bytes is skipped; a release,
    withdrawal or key whose id is there with other bytes is refused (a result with another record
    hash is a new entry: ``audit.unique_key``). The log's first entry names ``signer``'s key;
    a signer that is not the log's key must ``rotate`` first."""
    with store.locked():
        state = verify_for_append(store, origin, kept_path)
        new: list[bytes] = []
        if state.active_key is None:
            new.append(rotation_entry(None, signer.public_key, None, signer.sign, new_id=signer.key_id))
        elif not is_active(state, signer):
            raise LogIntegrityError(f"the log's key is {state.active_key}, not the signing key {signer.key_id}: record a key "
                                    "rotation signed by both keys first (docs/transparency-log.md)")
        seen: dict[tuple, bytes] = {}
        for entry in entries:
            body = parse_entry(entry)
            key = unique_key(body)
            if key in state.unique:
                if store.entry(state.unique[key]) != entry:
                    raise LogIntegrityError(f"{body['type']} {body['id']} is already in the log with other content; a "
                                            "log entry is never rewritten")
                continue
            if key in seen:
                if seen[key] != entry:
                    raise LogIntegrityError(f"{body['type']} {body['id']} is given twice with different content")
                continue
            seen[key] = entry
            new.append(entry)
        return _commit(store, state, new, [signer], origin, kept_path)


def rotate(store: LogStore, old: NoteSigner, new: NoteSigner, origin: str, kept_path: Path) -> Checkpoint:
    """Record that ``new`` takes over from ``old`` (the log's key): a rotation entry signed by both,
    and a checkpoint signed by ``new`` (from this size on, ``old`` signs no valid checkpoint)."""
    with store.locked():
        state = verify_for_append(store, origin, kept_path)
        if not is_active(state, old):
            raise LogIntegrityError(f"the log's key is {state.active_key}, not {old.key_id}: only the "
                                    "current key can hand over")
        entry = rotation_entry(old.public_key, new.public_key, old.sign, new.sign, state.active_key, new.key_id)
        return _commit(store, state, [entry], [new], origin, kept_path)


def _commit(store: LogStore, state: LogState, new: list[bytes], signers: list[NoteSigner], origin: str,
            kept_path: Path) -> Checkpoint:
    size = store.append(new) if new else state.size
    if not new and state.checkpoint is not None and state.checkpoint.size == size:
        _write_kept(kept_path, state.checkpoint.note)
        return state.checkpoint
    checkpoint = sign_checkpoint(origin, size, store.root(size), signers)
    store.write_checkpoint(checkpoint.note)
    _write_kept(kept_path, checkpoint.note)
    return checkpoint


__all__ = ["KEPT_ENV", "append", "is_active", "kept_checkpoint_path", "read_kept", "rotate", "verify_for_append"]
