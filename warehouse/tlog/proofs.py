"""Checking what the log routes answer, as a verifier does: for ``medbench verify`` and any client.

Why: a proof is only worth something checked away from the server that made it. Given the keys a
reader trusts (pinned fingerprints, or ``/v1/keys`` when it trusts the server), these check:

- ``check_proof``: an inclusion proof (``GET /v1/results/{run_id}/proof`` or ``/v1/releases/{id}/proof``):
  the checkpoint it carries is signed by a trusted key, the leaf hash is the entry's, and the
  RFC 9162 path leads from it to the checkpoint's root; and, when given, that the entry says what
  the reader holds (the result record's hash, the release's manifest hash);
- ``check_since``: a consistency proof (``GET /v1/log/consistency``) from a checkpoint the reader
  kept to the current one: nothing the older checkpoint covered was changed or removed.

Each raises ``ProofError`` with one line saying what failed. Key lifetimes by position are checked
by the log's own ``audit``; a reader pinning one key checks that key only. docs/transparency-log.md
"Checking a proof without medbench" gives the same steps with nothing but hashlib and cryptography.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from warehouse.tlog.checkpoint import Checkpoint, CheckpointError, parse_checkpoint, verify_checkpoint
from warehouse.tlog.merkle import leaf_hash, verify_consistency, verify_inclusion


class ProofError(ValueError):
    """A proof or checkpoint that does not verify; the message says which check failed."""


def trusted_checkpoint(note: str, public_keys: Iterable[bytes], origin: str | None = None) -> Checkpoint:
    """The checkpoint of ``note`` when one of ``public_keys`` signed it (under its own origin, or ``origin``)."""
    try:
        claimed = parse_checkpoint(note)
        return verify_checkpoint(note, origin or claimed.origin, list(public_keys))[0]
    except CheckpointError as exc:
        raise ProofError(f"the checkpoint does not verify: {exc}") from None


def check_proof(proof: Mapping[str, Any], public_keys: Iterable[bytes], origin: str | None = None,
                expect: Mapping[str, str] | None = None) -> Checkpoint:
    """``proof`` (an InclusionProof body) verified; the checkpoint it proves against. ``expect``:
    fields the entry must hold, e.g. ``{"type": "result", "id": run_id, "record_sha256": ...}``."""
    try:
        checkpoint = trusted_checkpoint(proof["checkpoint"]["note"], public_keys, origin)
        entry = str(proof["entry"]).encode()
        index, size = int(proof["leaf_index"]), int(proof["tree_size"])
        path = [bytes.fromhex(h) for h in proof["hashes"]]
        claimed_leaf = bytes.fromhex(proof["leaf_hash"])
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ProofError):
            raise
        raise ProofError(f"the proof is malformed ({exc})") from None
    if size != checkpoint.size:
        raise ProofError(f"the proof is for a tree of {size} entries, its checkpoint has {checkpoint.size}")
    if leaf_hash(entry) != claimed_leaf:
        raise ProofError("the proof's leaf hash is not the hash of its entry")
    if not verify_inclusion(claimed_leaf, index, size, path, checkpoint.root):
        raise ProofError(f"the inclusion proof of entry {index} does not lead to the checkpoint's root: the entry is "
                         "not in the log the checkpoint signs")
    if expect:
        try:
            body = msgspec.json.decode(entry)
        except msgspec.DecodeError:
            raise ProofError("the proved entry is not JSON") from None
        wrong = [name for name, value in expect.items() if body.get(name) != value]
        if wrong:
            raise ProofError(f"the proved entry's {', '.join(wrong)} differ from what you hold")
    return checkpoint


def check_since(kept_note: str, consistency: Mapping[str, Any], current: Checkpoint,
                public_keys: Iterable[bytes]) -> Checkpoint:
    """The kept checkpoint, after checking that ``consistency`` proves ``current`` extends it."""
    keys = list(public_keys)
    kept = trusted_checkpoint(kept_note, keys)
    if kept.origin != current.origin:
        raise ProofError(f"the kept checkpoint is of log {kept.origin!r}, not {current.origin!r}")
    if kept.size > current.size:
        raise ProofError(f"the log now has {current.size} entries, fewer than the {kept.size} of the kept checkpoint: "
                         "it was truncated or forked")
    try:
        first, second = int(consistency["from"]), int(consistency["to"])
        path = [bytes.fromhex(h) for h in consistency["hashes"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ProofError(f"the consistency proof is malformed ({exc})") from None
    if (first, second) != (kept.size, current.size):
        raise ProofError(f"the consistency proof is from {first} to {second}, not from {kept.size} to {current.size}")
    if not verify_consistency(first, second, kept.root, current.root, path):
        raise ProofError(f"the log of {current.size} entries does not extend the kept checkpoint of {kept.size}: "
                         "entries it covered were changed or removed")
    return kept


def record_hash_of(record_json: bytes) -> str:
    """sha256 of a result record's canonical JSON, from its JSON bytes (what a result entry names)."""
    from warehouse.releases import canonical_json

    return hashlib.sha256(canonical_json(msgspec.json.decode(record_json))).hexdigest()


__all__ = ["ProofError", "check_proof", "check_since", "record_hash_of", "trusted_checkpoint"]
