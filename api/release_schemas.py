"""The bodies of the release routes and a Result's withdrawal (CONTRACT.md "Releases", "Result status").

Kept apart from ``api.schemas`` (which re-exports them) so each module stays small; they depend on
nothing else in the API.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec


class Withdrawn(msgspec.Struct):
    reason: str
    date: dt.date


class ReleaseSummary(msgspec.Struct):
    """One release of ``GET /v1/releases`` (CONTRACT.md "Releases")."""

    id: str
    published_at: str
    n_results: int
    tasks: list[str]
    manifest_sha256: str
    previous: str | None
    url: str  # addition: the release's page
    signature: dict[str, Any] | None = None  # {key_id, value, signed}; null: published without a signing key


class ReleasePage(msgspec.Struct):
    releases: list[ReleaseSummary]
    total: int
    limit: int
    offset: int


class Release(ReleaseSummary, kw_only=True):
    """``GET /v1/releases/{id}``: the release, its manifest (the exact object signed and hashed) and BibTeX."""

    manifest: dict[str, Any]
    bibtex: str
