"""The submissions store: one interface over SQLite (embedded default) and PostgreSQL (deployments).

The API writes submissions (``create``), the maintainers' CLI and the Dagster sensor move them
(``transition``), and everyone reads them (``get``, ``list``). Every state change and its history
entry are written in one transaction that first locks the submission's row, and a move the state
machine (records.TRANSITIONS) does not allow is refused, so concurrent writers can neither lose a
transition nor record one twice. ``create`` checks the owner's quota and the dedupe key and inserts
under one per-owner lock (SQLite: the database write lock; PostgreSQL: an advisory lock), so a
quota is exact however many requests arrive at once.

Its file name is shared on purpose: each store package has its own records, store and tables
modules, named alike.
"""

from __future__ import annotations

import hashlib
import secrets as random
import time
from collections.abc import Sequence
from typing import Any

import msgspec
import sqlalchemy as sa

from medbench.layout import DataDir
from medbench.submissions.engine import is_sqlite, make_engines, migrate, store_url
from medbench.submissions.records import (
    STATES,
    TERMINAL,
    TIERS,
    TRANSITIONS,
    UNCHARGED,
    HistoryEntry,
    IllegalTransition,
    QuotaExceeded,
    Resources,
    Submission,
    SubmissionNotFound,
    SubmissionRefused,
    iso,
)
from medbench.submissions.tables import history, submissions
from medbench.submissions.token_store import TokenStore

QUOTA_WINDOW_S = 7 * 24 * 3600
_json = msgspec.json.Encoder(order="sorted")


def dedupe_key(model_spec_hash: str, tasks: Sequence[str], tier: str) -> str:
    """Two open submissions with this same key are the same request."""
    return hashlib.sha256(_json.encode([model_spec_hash, sorted(set(tasks)), tier])).hexdigest()


class Created(msgspec.Struct, frozen=True):
    submission: Submission
    created: bool  # False: an open submission of the same request already existed and is returned


class SubmissionStore:
    """Open with ``SubmissionStore.open(url)`` or ``SubmissionStore.for_data(DataDir)``; migrates on open."""

    def __init__(self, url: str):
        self.url = url
        self._reader, self._writer = make_engines(url)
        migrate(self._writer)
        self.tokens = TokenStore(self._reader, self._writer)

    @classmethod
    def open(cls, url: str) -> SubmissionStore:
        return cls(url)

    @classmethod
    def for_data(cls, data: DataDir | None = None) -> SubmissionStore:
        """The store the environment names (``$MEDBENCH_SUBMISSIONS_DB``), else the data directory's SQLite file."""
        return cls(store_url(data))

    def close(self) -> None:
        self._reader.dispose()
        if self._writer is not self._reader:
            self._writer.dispose()

    # -- writes ----------------------------------------------------------------------
    def create(self, *, owner: str, model: dict[str, Any], tasks: Sequence[str], tier: str, model_spec_hash: str,
               quota: int | None, token_id: str | None = None, package_sha256: str | None = None,
               resources: Resources | None = None, validated_reason: str | None = None,
               now: float | None = None) -> Created:
        """Record a validated request: received -> validated -> awaiting_approval (official:
        awaiting_package), or return the open submission of the same request. ``quota`` (None: no
        limit) counts this owner's submissions of the last 7 days that did not fail and were not
        rejected; over it raises QuotaExceeded and nothing is stored."""
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {', '.join(TIERS)}")
        now = time.time() if now is None else now
        key = dedupe_key(model_spec_hash, tasks, tier)
        waiting = "awaiting_package" if tier == "official" else "awaiting_approval"
        slug, model_id = str(model.get("slug", "")), str(model.get("provider_model_id", ""))
        with self._writer.begin() as conn:
            self._lock(conn, f"owner:{owner}")
            self._lock(conn, f"model-id:{model_id}")  # two providers racing for one id: one wins
            existing = conn.execute(sa.select(submissions.c.id).where(submissions.c.open_key == key)).scalar()
            if existing is not None:
                return Created(self._read(conn, existing), created=False)
            self._check_identity(conn, owner, slug, model_id)
            if quota is not None:
                self._check_quota(conn, owner, quota, now)
            sid = random.token_hex(6)
            conn.execute(submissions.insert().values(
                id=sid, owner=owner, token_id=token_id, state=waiting, state_reason=None, tier=tier,
                slug=slug, provider_model_id=model_id,
                model=_json.encode(model).decode(), tasks=_json.encode(list(tasks)).decode(),
                model_spec_hash=model_spec_hash, package_sha256=package_sha256,
                resources=_json.encode(resources).decode() if resources is not None else None,
                run_ids="[]", open_key=key, created_at=now, updated_at=now))
            conn.execute(history.insert(), [
                {"submission_id": sid, "state": "received", "at": now, "reason": None},
                {"submission_id": sid, "state": "validated", "at": now, "reason": validated_reason},
                {"submission_id": sid, "state": waiting, "at": now, "reason": None},
            ])
            return Created(self._read(conn, sid), created=True)

    def transition(self, submission_id: str, to_state: str, reason: str | None = None,
                   run_ids: Sequence[str] | None = None, now: float | None = None) -> Submission:
        """Move a submission, recording {state, at, reason}; ``run_ids`` are added to its list."""
        if to_state not in STATES:
            raise IllegalTransition(f"unknown state {to_state!r}: the states are {', '.join(STATES)}")
        now = time.time() if now is None else now
        with self._writer.begin() as conn:
            row = conn.execute(submissions.select().where(submissions.c.id == submission_id).with_for_update()).first()
            if row is None:
                raise SubmissionNotFound(f"no submission {submission_id!r}")
            if to_state not in TRANSITIONS[row.state]:
                allowed = ", ".join(sorted(TRANSITIONS[row.state])) or "none (it has ended)"
                raise IllegalTransition(f"submission {submission_id} is {row.state}; it cannot move to {to_state} "
                                        f"(allowed: {allowed})")
            runs = msgspec.json.decode(row.run_ids)
            runs += [r for r in (run_ids or ()) if r not in runs]
            conn.execute(submissions.update().where(submissions.c.id == submission_id).values(
                state=to_state, state_reason=reason, updated_at=now, run_ids=_json.encode(runs).decode(),
                open_key=None if to_state in TERMINAL else row.open_key))
            conn.execute(history.insert().values(submission_id=submission_id, state=to_state, at=now, reason=reason))
            return self._read(conn, submission_id)

    # -- reads -----------------------------------------------------------------------
    def get(self, submission_id: str) -> Submission:
        with self._reader.connect() as conn:
            return self._read(conn, submission_id)

    def list(self, *, owner: str | None = None, state: str | None = None, limit: int = 100,
             offset: int = 0) -> tuple[list[Submission], int]:
        """(one page, newest first; the total matching). An offset past the total is an empty page, as
        on every listing; SQL integers are 64-bit, so one beyond the total is not sent to the database."""
        where = []
        if owner is not None:
            where.append(submissions.c.owner == owner)
        if state is not None:
            where.append(submissions.c.state == state)
        with self._reader.connect() as conn:
            total = conn.execute(sa.select(sa.func.count()).select_from(submissions).where(*where)).scalar_one()
            if offset >= total:
                return [], total
            rows = conn.execute(submissions.select().where(*where)
                                .order_by(submissions.c.created_at.desc(), submissions.c.id)
                                .limit(limit).offset(offset)).all()
            return [self._from_row(conn, r) for r in rows], total

    def approved(self, limit: int = 100) -> list[Submission]:
        """Approved submissions whose runs have not been launched yet (queued, no run ids), oldest first:
        what the sensor (or ``medbench submissions run``) processes next."""
        with self._reader.connect() as conn:
            rows = conn.execute(submissions.select()
                                .where(submissions.c.state == "queued", submissions.c.run_ids == "[]")
                                .order_by(submissions.c.updated_at, submissions.c.id).limit(limit)).all()
            return [self._from_row(conn, r) for r in rows]

    def in_state(self, state: str, limit: int = 1000) -> list[Submission]:
        """Every submission in one state, oldest change first (the sensor's view of running ones)."""
        with self._reader.connect() as conn:
            rows = conn.execute(submissions.select().where(submissions.c.state == state)
                                .order_by(submissions.c.updated_at, submissions.c.id).limit(limit)).all()
            return [self._from_row(conn, r) for r in rows]

    def charged(self, owner: str, now: float | None = None) -> int:
        """How many of the owner's submissions count against the quota now."""
        now = time.time() if now is None else now
        with self._reader.connect() as conn:
            return len(self._charged_times(conn, owner, now))

    def sandbox_runs(self, owner: str, since: float, now: float | None = None) -> list[tuple[float, float]]:
        """(start, end) of each of the owner's official runs begun since ``since``: from entering
        ``running`` to the next state (now, while it still runs). Failed runs count like any other:
        the sandbox budget charges the time the sandbox was held (docs/official-tier.md)."""
        now = time.time() if now is None else now
        query = (sa.select(history.c.submission_id, history.c.state, history.c.at)
                 .join(submissions, submissions.c.id == history.c.submission_id)
                 .where(submissions.c.owner == owner, submissions.c.tier == "official",
                        submissions.c.updated_at >= since)
                 .order_by(history.c.submission_id, history.c.seq))
        runs, started = [], None
        with self._reader.connect() as conn:
            rows = conn.execute(query).all()
        for i, (sid, state, at) in enumerate(rows):
            if state == "running":
                started = at
            nxt = rows[i + 1] if i + 1 < len(rows) else None
            if started is not None and (nxt is None or nxt[0] != sid or nxt[1] != "running"):
                end = nxt[2] if nxt is not None and nxt[0] == sid else now
                if started >= since:
                    runs.append((started, end))
                started = None
        return runs

    def owners_of(self, *, slug: str | None = None, provider_model_id: str | None = None) -> set[str]:
        """Owners whose submissions name this slug or provider model id (identity checks across providers)."""
        where = []
        if slug is not None:
            where.append(submissions.c.slug == slug)
        if provider_model_id is not None:
            where.append(submissions.c.provider_model_id == provider_model_id)
        if not where:
            return set()
        with self._reader.connect() as conn:
            return set(conn.execute(sa.select(submissions.c.owner).where(sa.or_(*where)).distinct()).scalars())

    # -- internals ---------------------------------------------------------------------
    def _lock(self, conn: sa.Connection, name: str) -> None:
        """A transaction-long lock on a name (PostgreSQL advisory lock); SQLite's BEGIN IMMEDIATE already
        holds the database's one write lock."""
        if not is_sqlite(self.url):
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"medbench-{name}"})

    def _check_identity(self, conn: sa.Connection, owner: str, slug: str, model_id: str) -> None:
        """A slug or provider model id another provider submitted stays theirs (lookups stay unambiguous)."""
        for column, value, field in ((submissions.c.slug, slug, "model.slug"),
                                     (submissions.c.provider_model_id, model_id, "model.provider_model_id")):
            other = conn.execute(sa.select(submissions.c.owner).where(column == value, submissions.c.owner != owner)
                                 .limit(1)).scalar()
            if other is not None:
                raise SubmissionRefused(field, f"{value!r} was submitted by another provider ({other})")

    def _charged_times(self, conn: sa.Connection, owner: str, now: float) -> list[float]:
        return list(conn.execute(sa.select(submissions.c.created_at).where(
            submissions.c.owner == owner, submissions.c.created_at > now - QUOTA_WINDOW_S,
            submissions.c.state.not_in(sorted(UNCHARGED))).order_by(submissions.c.created_at)).scalars())

    def _check_quota(self, conn: sa.Connection, owner: str, quota: int, now: float) -> None:
        times = self._charged_times(conn, owner, now)
        if len(times) >= quota:
            oldest = times[len(times) - quota] if quota > 0 else now
            retry = max(1, int(oldest + QUOTA_WINDOW_S - now) + 1)
            raise QuotaExceeded(f"{owner} has {len(times)} accepted submissions in the last 7 days (quota {quota}); "
                                "failed and rejected ones do not count", retry_after=retry)

    def _read(self, conn: sa.Connection, submission_id: str) -> Submission:
        row = conn.execute(submissions.select().where(submissions.c.id == submission_id)).first()
        if row is None:
            raise SubmissionNotFound(f"no submission {submission_id!r}")
        return self._from_row(conn, row)

    def _from_row(self, conn: sa.Connection, row) -> Submission:
        steps = conn.execute(sa.select(history.c.state, history.c.at, history.c.reason)
                             .where(history.c.submission_id == row.id).order_by(history.c.seq)).all()
        return Submission(
            id=row.id, state=row.state, state_reason=row.state_reason, owner=row.owner,
            model=msgspec.json.decode(row.model), tasks=msgspec.json.decode(row.tasks), tier=row.tier,
            created_at=iso(row.created_at), updated_at=iso(row.updated_at),
            run_ids=msgspec.json.decode(row.run_ids),
            history=[HistoryEntry(state=s, at=iso(at), reason=reason) for s, at, reason in steps],
            model_spec_hash=row.model_spec_hash, package_sha256=row.package_sha256,
            resources=msgspec.json.decode(row.resources, type=Resources) if row.resources else None)
