"""The bodies of the release and key routes, a Result's withdrawal and signature (docs/api.md,
"Releases, withdrawals and supersession" and "Signatures").

Kept apart from ``api.schemas`` (which re-exports them) so each module stays small; they depend on
nothing else in the API.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

import msgspec


class Withdrawn(msgspec.Struct):
    reason: str
    date: dt.date


class Signature(msgspec.Struct):
    """docs/api.md, "Signatures": ``value`` (base64 Ed25519) signs ``signed`` (UTF-8) with ``/v1/keys``' ``key_id``."""

    key_id: str
    value: str
    signed: str
    # when it was signed (ISO 8601 UTC); inside ``signed`` too for a result; null for a signature
    # made before signatures carried a time
    signed_at: str | None = None


class PublicKey(msgspec.Struct, kw_only=True):
    """A public key that signed results or releases; ``valid_until`` null while it is the current one."""

    key_id: str
    algorithm: Literal["ed25519"]
    public_key: str  # base64 of the 32 raw bytes
    fingerprint: str  # SHA256:<unpadded base64 of the raw key's sha256>
    valid_from: dt.date
    valid_until: dt.date | None = None


class KeyList(msgspec.Struct):
    keys: list[PublicKey]


class ReleaseSummary(msgspec.Struct):
    """One release of ``GET /v1/releases`` (docs/api.md, "Releases, withdrawals and supersession")."""

    id: str
    published_at: str
    n_results: int
    tasks: list[str]
    manifest_sha256: str
    previous: str | None
    url: str  # addition: the release's page
    signature: Signature | None = None  # over the manifest; null: published without a signing key


class ReleasePage(msgspec.Struct):
    releases: list[ReleaseSummary]
    total: int
    limit: int
    offset: int


class Release(ReleaseSummary, kw_only=True):
    """``GET /v1/releases/{id}``: the release, its full manifest and BibTeX; the object signed and hashed is the
    manifest of a full release, the ``delta`` of a release published as one."""

    manifest: dict[str, Any]
    bibtex: str
    # a release published as a delta (docs/concepts.md, "Releases"): the delta, the object signed and
    # hashed; ``manifest`` is then the full manifest rebuilt from it; null for a full release
    delta: dict[str, Any] | None = None
