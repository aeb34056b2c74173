"""The submissions store on both of its engines: SQLite in WAL mode (the embedded default) and a real
PostgreSQL started by the test session. Same interface, same schema, same refusals."""

from __future__ import annotations

import threading
import uuid

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from support.postgres import postgres  # noqa: F401  (the session's PostgreSQL cluster)
from medbench.layout import DataDir
from medbench.submissions import (
    AuthFailure, IllegalTransition, QuotaExceeded, SubmissionNotFound, SubmissionRefused, SubmissionStore,
    TokenNotFound,
)
from medbench.submissions.engine import URL_ENV
from medbench.submissions.tables import metadata
from medbench.submissions.token_secrets import SECRET_RE, well_formed

HASH = "a" * 64
T0 = 1_800_000_000.0


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'state' / 'submissions.sqlite3'}"
    else:
        pg = request.getfixturevalue("postgres")
        url = pg.create_db(f"store_{uuid.uuid4().hex[:10]}").url()
    opened = SubmissionStore.open(url)
    yield opened
    opened.close()


def submit(store, owner="acme", spec_hash=HASH, tasks=("clinicalqa@0",), tier="baseline", quota=None, now=T0):
    return store.create(owner=owner, model={"slug": f"{owner}/m", "provider_model_id": f"{owner}-m"}, tasks=list(tasks),
                        tier=tier, model_spec_hash=spec_hash, quota=quota, now=now)


def test_migrated_schema_is_the_declared_one(store):
    with store._writer.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diffs == []


def test_sqlite_runs_in_wal_mode_in_the_data_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(URL_ENV, raising=False)
    data = DataDir(tmp_path / "data")
    opened = SubmissionStore.for_data(data)
    with opened._reader.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    assert data.submissions_db == tmp_path / "data" / "state" / "submissions.sqlite3"
    assert data.submissions_db.exists()
    opened.close()


def test_a_new_submission_records_received_validated_and_awaiting(store):
    made = submit(store)
    assert made.created
    sub = made.submission
    assert [h.state for h in sub.history] == ["received", "validated", "awaiting_approval"]
    assert sub.state == "awaiting_approval" and sub.owner == "acme" and sub.run_ids == []
    assert len(sub.id) == 12 and store.get(sub.id) == sub
    official = submit(store, spec_hash="b" * 64, tier="official").submission
    assert official.state == "awaiting_package"


def test_an_open_duplicate_returns_the_first_and_a_rejected_one_can_be_resubmitted(store):
    first = submit(store).submission
    again = submit(store, tasks=("clinicalqa@0", "clinicalqa@0"))
    assert not again.created and again.submission.id == first.id
    assert submit(store, tier="official").created  # another tier is another request
    store.transition(first.id, "rejected", "wrong revision")
    second = submit(store)
    assert second.created and second.submission.id != first.id


def test_quota_counts_accepted_submissions_of_seven_days_not_failed_or_rejected(store):
    a = submit(store, spec_hash="1" * 64, quota=2).submission
    submit(store, spec_hash="2" * 64, quota=2, now=T0 + 10)
    with pytest.raises(QuotaExceeded) as refused:
        submit(store, spec_hash="3" * 64, quota=2, now=T0 + 20)
    assert refused.value.retry_after == 7 * 24 * 3600 - 20 + 1
    assert store.list(owner="acme")[1] == 2  # nothing stored for the refusal
    assert submit(store, owner="other", quota=2).created  # quotas are per owner
    store.transition(a.id, "failed", "run abc died")
    assert store.charged("acme", now=T0 + 30) == 1
    assert submit(store, spec_hash="3" * 64, quota=2, now=T0 + 30).created
    assert submit(store, spec_hash="4" * 64, quota=2, now=T0 + 7 * 24 * 3600 + 11).created  # the oldest aged out


def test_transitions_follow_the_state_machine_and_record_history(store):
    sub = submit(store).submission
    with pytest.raises(IllegalTransition, match="awaiting_approval; it cannot move to running"):
        store.transition(sub.id, "running")
    with pytest.raises(IllegalTransition, match="unknown state"):
        store.transition(sub.id, "approved")
    with pytest.raises(SubmissionNotFound):
        store.transition("0" * 12, "queued")
    assert store.get(sub.id).history == sub.history  # refusals record nothing
    store.transition(sub.id, "queued", "approved by maintainer: fine", now=T0 + 1)
    assert [s.id for s in store.approved()] == [sub.id]
    store.transition(sub.id, "running", run_ids=["0123456789ab"], now=T0 + 2)
    assert store.approved() == []
    done = store.transition(sub.id, "evaluated", run_ids=["0123456789ab", "ba9876543210"], now=T0 + 3)
    assert done.run_ids == ["0123456789ab", "ba9876543210"]
    assert [(h.state, h.reason) for h in done.history][-3:] == [
        ("queued", "approved by maintainer: fine"), ("running", None), ("evaluated", None)]
    assert done.history[-1].at.endswith("Z") and done.updated_at == done.history[-1].at
    with pytest.raises(IllegalTransition, match="it has ended"):
        store.transition(sub.id, "failed", "late event")


def test_list_filters_and_pages_newest_first(store):
    ids = [submit(store, owner=o, spec_hash=c * 64, now=T0 + i).submission.id
           for i, (o, c) in enumerate([("acme", "1"), ("acme", "2"), ("beta", "3")])]
    store.transition(ids[0], "rejected", "no")
    page, total = store.list(owner="acme")
    assert total == 2 and [s.id for s in page] == [ids[1], ids[0]]
    assert [s.id for s in store.list(state="rejected")[0]] == [ids[0]]
    page, total = store.list(limit=1, offset=1)
    assert total == 3 and [s.id for s in page] == [ids[1]]
    assert store.list(offset=2**70) == ([], 3)  # past any SQL integer: an empty page, as on every listing
    assert store.owners_of(slug="beta/m") == {"beta"} and store.owners_of(provider_model_id="acme-m") == {"acme"}


def test_tokens_keep_only_a_hash_and_say_why_they_are_refused(store):
    token, secret = store.tokens.create("acme", ["submit"], expires_in_s=3600, note="ci", now=T0)
    assert SECRET_RE.match(secret) and well_formed(secret) and len(secret) == 4 + 52 + 6
    assert not well_formed(secret[:-1] + ("A" if secret[-1] != "A" else "B"))  # the checksum catches a typo
    with store._reader.connect() as conn:
        stored = [str(v) for table in ("tokens", "submissions") for row in conn.execute(sa.text(f"SELECT * FROM {table}"))
                  for v in row]
    assert not any(secret in v or secret[4:56] in v for v in stored)
    assert store.tokens.authenticate(secret, now=T0 + 1).id == token.id
    assert store.tokens.authenticate(None) == AuthFailure("missing")
    assert store.tokens.authenticate("mbt_nope") == AuthFailure("unknown")
    _, other = store.tokens.create("acme", ["submit"])
    store.tokens.revoke(token.id, now=T0 + 2)
    assert store.tokens.authenticate(secret, now=T0 + 3) == AuthFailure("revoked")
    assert store.tokens.authenticate(other[:4] + "A" * 52 + other[56:]) in (AuthFailure("unknown"),)
    _, short = store.tokens.create("beta", ["submit"], expires_in_s=10, now=T0)
    assert store.tokens.authenticate(short, now=T0 + 11) == AuthFailure("expired")
    with pytest.raises(TokenNotFound):
        store.tokens.revoke("nope")
    with pytest.raises(ValueError, match="unknown scope admin"):
        store.tokens.create("acme", ["admin"])
    line = next(t.line() for t in store.tokens.list() if t.id == token.id)
    assert line.startswith(token.id + " owner=acme scopes=submit created=2027-")
    assert "revoked=2027-" in line and "note='ci'" in line and secret not in line


def test_last_used_is_written_at_most_once_a_minute(store):
    token, secret = store.tokens.create("acme", ["submit"], now=T0)
    store.tokens.authenticate(secret, now=T0 + 5)
    first = store.tokens.get(token.id).last_used_at
    store.tokens.authenticate(secret, now=T0 + 30)
    assert store.tokens.get(token.id).last_used_at == first
    store.tokens.authenticate(secret, now=T0 + 66)
    assert store.tokens.get(token.id).last_used_at > first


def test_the_rate_limit_window_is_shared_and_says_when_to_retry(store):
    token, _ = store.tokens.create("acme", ["submit"], now=T0)
    assert [store.tokens.hit(token.id, 2, 60, now=T0 + i) for i in range(3)] == [None, None, 58]
    assert store.tokens.hit(token.id, 2, 60, now=T0 + 61) is None


def test_concurrent_submissions_keep_the_quota_exact_and_never_duplicate(store):
    quota, results, errors = 5, [], []

    def worker(i: int) -> None:
        try:
            results.append(submit(store, spec_hash=f"{i % 8:064x}", quota=quota).submission.id)
        except QuotaExceeded:
            errors.append(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    page, total = store.list(owner="acme", limit=100)
    assert total == quota and len({s.model_spec_hash for s in page}) == quota
    assert set(results) == {s.id for s in page}


def test_concurrent_transitions_record_each_move_once(store):
    sub = submit(store).submission
    outcomes = []

    def approve() -> None:
        try:
            store.transition(sub.id, "queued", "approved")
            outcomes.append("ok")
        except IllegalTransition:
            outcomes.append("refused")

    threads = [threading.Thread(target=approve) for _ in range(6)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert sorted(outcomes) == ["ok"] + ["refused"] * 5
    assert [h.state for h in store.get(sub.id).history].count("queued") == 1


def test_the_api_state_enum_is_the_stores() -> None:
    from typing import get_args

    from api.schemas import SubmissionState
    from medbench.submissions import STATES

    assert get_args(SubmissionState) == STATES


def test_a_provider_model_id_stays_with_the_provider_that_submitted_it_first(store):
    submit(store, owner="acme")
    with pytest.raises(SubmissionRefused, match="model.provider_model_id: 'acme-m' was submitted by another provider"):
        store.create(owner="beta", model={"slug": "beta/m", "provider_model_id": "acme-m"}, tasks=["clinicalqa@0"],
                     tier="baseline", model_spec_hash="b" * 64, quota=None)
    assert store.list()[1] == 1
