"""Checking what the log routes answer, as a verifier does: for ``medbench verify`` and any client.

Why: a proof is only worth something checked away from the server that made it. Given the keys a
reader trusts (pinned fingerprints, or ``/v1/keys`` when it trusts the server), these check:

- ``check_proof``: an inclusion proof (``GET /v1/results/{run_id}/proof`` or ``/v1/releases/{id}/proof``):
  the checkpoint it carries is signed by a trusted key, the leaf hash is the entry's, and the
  RFC 9162 path leads from it to the checkpoint's root; and, when given, that the entry says what
  the reader holds (the result record's hash, the release's manifest hash);
- ``check_since``: a consistency proof (``GET /v1/log/consistency``) from a checkpoint the reader
  kept to the current one: nothing the older checkpoint covered was changed or removed.

- ``check_key_lifetime``: the checkpoint against the log's entries up to its size (as
  ``/v1/log/entries`` serves them): they hash to its root, and its key is one the log's rotations
  make valid at that size (``audit`` does the same on a data directory).

Each raises ``ProofError`` with one line saying what failed. A reader pinning one key checks that key only. docs/transparency-log.md
"Checking a proof without medbench" gives the same steps with nothing but hashlib and cryptography.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
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


def check_key_lifetime(entries: Sequence[bytes], note: str, public_keys: Iterable[bytes],
                       signer_id: str | None = None) -> Checkpoint:
    """The checkpoint of ``note`` after checking it against the log's own first entries: ``entries``
    (at least as many as its size, e.g. the pages of ``GET /v1/log/entries``) hash to its root, and
    it is signed by one of ``public_keys`` that the log's key rotations make valid at its size (a key
    retired before, or introduced after, signs nothing valid there). ``signer_id``, when given, must
    be a key the log introduced (the key a result or release was signed with)."""
    from warehouse.tlog.audit import key_lifetimes
    from warehouse.tlog.entries import EntryError, parse_entry
    from warehouse.tlog.merkle import root_of_leaves

    try:
        claimed = parse_checkpoint(note)
    except CheckpointError as exc:
        raise ProofError(f"the checkpoint is malformed ({exc})") from None
    if len(entries) < claimed.size:
        raise ProofError(f"the log served {len(entries)} entries, fewer than its checkpoint's {claimed.size}")
    prefix = list(entries[:claimed.size])
    if root_of_leaves([leaf_hash(e) for e in prefix]) != claimed.root:
        raise ProofError(f"the log's first {claimed.size} entries do not hash to the checkpoint's root")
    try:
        lives, _ = key_lifetimes([parse_entry(e) for e in prefix])
    except EntryError as exc:
        raise ProofError(f"the log holds an invalid entry or key rotation: {exc}") from None
    trusted = set(public_keys)
    valid = [life.public_key for life in lives.values() if life.valid_at(claimed.size) and life.public_key in trusted]
    try:
        checkpoint = verify_checkpoint(note, claimed.origin, valid)[0]
    except CheckpointError:
        raise ProofError(f"the checkpoint of size {claimed.size} is not signed by a trusted key the log holds valid at "
                         "that size (a key retired before it, or not yet introduced, signs nothing there)") from None
    if signer_id is not None and not knows_key(lives, signer_id):
        raise ProofError(f"key {signer_id} is not a key of the transparency log (no key rotation introduces it)")
    return checkpoint


def knows_key(lives: Mapping[str, Any], key_id: str) -> bool:
    """Whether the log introduced the key ``key_id`` (a demo key's ``demo-`` is not part of its hash:
    logs written before demo keys were named so in the log hold the bare id)."""
    bare = key_id.removeprefix("demo-")
    return key_id in lives or bare in lives or f"demo-{bare}" in lives


def record_hash_of(record_json: bytes) -> str:
    """sha256 of a result record's canonical JSON, from its JSON bytes (what a result entry names)."""
    from warehouse.releases import canonical_json

    return hashlib.sha256(canonical_json(msgspec.json.decode(record_json))).hexdigest()


__all__ = ["ProofError", "check_key_lifetime", "check_proof", "check_since", "knows_key", "record_hash_of", "trusted_checkpoint"]
