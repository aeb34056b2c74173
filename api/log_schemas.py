"""The bodies of the transparency-log routes (docs/transparency-log.md "Routes").

Kept apart from ``api.schemas`` so each module stays small; they depend on nothing else in the API.
"""

from __future__ import annotations

from typing import Literal

import msgspec

EntryType = Literal["result", "release", "withdrawal", "key_rotation"]


class Checkpoint(msgspec.Struct, kw_only=True):
    """The latest signed checkpoint: ``note`` is the C2SP tlog-checkpoint signed note itself;
    ``signature`` is the base64 Ed25519 signature of its text by ``/v1/keys``' ``key_id``."""

    tree_size: int
    root_hash: str  # hex
    key_id: str | None
    signature: str | None
    note: str
    origin: str


class LogEntry(msgspec.Struct, kw_only=True):
    index: int
    type: EntryType
    id: str
    entry: str  # the exact leaf bytes (canonical JSON), hashed as SHA-256(0x00 || entry)
    leaf_hash: str  # hex


class LogEntryPage(msgspec.Struct, kw_only=True):
    start: int
    end: int
    tree_size: int
    entries: list[LogEntry]


class InclusionProof(msgspec.Struct, kw_only=True):
    """RFC 9162 inclusion proof of ``entry`` at ``leaf_index`` in the tree of ``checkpoint``."""

    leaf_index: int
    tree_size: int
    leaf_hash: str
    entry: str
    hashes: list[str]
    checkpoint: Checkpoint


class ConsistencyProof(msgspec.Struct, kw_only=True):
    """RFC 9162 consistency proof that the tree of ``to`` leaves extends the tree of ``from``."""

    from_: int = msgspec.field(name="from")
    to: int
    hashes: list[str]
