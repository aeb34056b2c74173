"""The submission and token records the store hands out, and the state machine they move through.

These Structs are the public shape of ``GET /v1/submissions/{id}`` (docs/api.md and docs/submitting.md): the
API encodes them as they are, so nothing secret may ever become a field here (a token's secret is
never stored at all; the token that submitted is kept in the store's own column, never shown).

Its file name is shared on purpose: each store package has its own records, store and tables
modules, named alike.
"""

from __future__ import annotations

import datetime as dt

import msgspec

STATES = ("received", "validated", "awaiting_package", "awaiting_approval", "queued", "running",
          "evaluated", "failed", "rejected")
TERMINAL = frozenset({"evaluated", "failed", "rejected"})
# Failed and rejected submissions are not charged against the owner's quota (and may be resubmitted).
UNCHARGED = frozenset({"failed", "rejected"})
TIERS = ("baseline", "official")

# Every legal move; anything else is refused, so a late or repeated event (a run reported twice, an
# approval of a rejected submission) cannot rewrite history. Any open state may fail or be rejected.
TRANSITIONS: dict[str, frozenset[str]] = {
    "received": frozenset({"validated", "failed", "rejected"}),
    "validated": frozenset({"awaiting_package", "awaiting_approval", "failed", "rejected"}),
    "awaiting_package": frozenset({"awaiting_approval", "failed", "rejected"}),
    "awaiting_approval": frozenset({"queued", "failed", "rejected"}),
    # queued -> evaluated: rule one found every result when the runs were about to launch
    "queued": frozenset({"running", "evaluated", "failed", "rejected"}),
    "running": frozenset({"evaluated", "failed"}),
    "evaluated": frozenset(),
    "failed": frozenset(),
    "rejected": frozenset(),
}


def iso(epoch: float) -> str:
    """UTC ISO-8601 with microseconds and a ``Z``: sortable, and the same on SQLite and PostgreSQL."""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class HistoryEntry(msgspec.Struct, frozen=True):
    state: str
    at: str
    reason: str | None = None


class Resources(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a submission asks for; the maintainers' limits decide whether it is granted."""

    pool: str
    memory_gib: float
    wall_minutes: float


class Submission(msgspec.Struct, frozen=True):
    """One request to evaluate a model on some tasks, as anyone may read it (no secrets)."""

    id: str
    state: str
    state_reason: str | None
    owner: str
    model: dict
    tasks: list[str]
    tier: str
    created_at: str
    updated_at: str
    run_ids: list[str]
    history: list[HistoryEntry]
    model_spec_hash: str
    package_sha256: str | None = None
    resources: Resources | None = None

    @property
    def open(self) -> bool:
        return self.state not in TERMINAL


class Token(msgspec.Struct, frozen=True):
    """A token as the maintainers see it: never its secret, only what it is for and its life."""

    id: str
    owner: str
    scopes: list[str]
    created_at: str
    expires_at: str | None
    last_used_at: str | None
    revoked_at: str | None
    note: str = ""

    def line(self) -> str:
        """The one plain line `medbench tokens list` prints, id first."""
        return (f"{self.id} owner={self.owner} scopes={','.join(self.scopes)} created={self.created_at} "
                f"expires={self.expires_at or 'never'} last_used={self.last_used_at or 'never'} "
                f"revoked={self.revoked_at or 'no'}" + (f" note={self.note!r}" if self.note else ""))


class StoreError(Exception):
    """Base of the store's refusals; each message is one line a user can act on."""


class SubmissionNotFound(StoreError):
    pass


class TokenNotFound(StoreError):
    pass


class IllegalTransition(StoreError):
    pass


class QuotaExceeded(StoreError):
    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class AuthFailure(msgspec.Struct, frozen=True):
    """Why a bearer token was refused: ``missing``, ``unknown``, ``expired`` or ``revoked``."""

    reason: str

    def message(self) -> str:
        return {
            "missing": "no token: send Authorization: Bearer <token> (maintainers create tokens with medbench tokens create)",
            "unknown": "unknown token: check that it was copied whole, or ask the maintainers for a new one",
            "expired": "expired token: ask the maintainers for a new one",
            "revoked": "revoked token: ask the maintainers for a new one",
        }[self.reason]


class SubmissionRefused(StoreError):
    """A submission refused before anything is stored: ``invalid_submission`` 422 (naming the field)
    or ``forbidden`` 403 (a slug outside the token owner's namespace). The validator that
    ``medbench serve`` hands the API raises it; the API answers it as it is."""

    def __init__(self, field: str, problem: str, *, status: int = 422, code: str = "invalid_submission"):
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field, self.status, self.code = field, status, code


class Checked(msgspec.Struct, frozen=True):
    """A submission the validator accepted: the model spec exactly as it will be written (provider,
    tasks and price filled in by medbench), its hash, and what the API stores with it."""

    model: dict
    model_spec_hash: str
    tasks: list[str]  # "slug@version", resolved
    tier: str
    package_sha256: str | None = None
    resources: Resources | None = None
    auto_approve: bool = False
