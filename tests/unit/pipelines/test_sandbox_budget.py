"""Each owner's sandbox budget: sandbox-seconds per 30 days, every official run counted (failed ones
too), ``quota_exceeded`` 429 with the date it frees up past it (docs/official-tier.md)."""

from __future__ import annotations

import time

import pytest

from pipelines.engine.submission_policy import (
    SANDBOX_WINDOW_S, Limits, Owner, SubmissionPolicy, check_sandbox_budget,
)
from medbench.submissions import SubmissionRefused, SubmissionStore

DAY = 24 * 3600


def official_run(store: SubmissionStore, n: int, start: float, seconds: float | None,
                 end_state: str = "failed") -> None:
    """An official submission of ``acme`` that held the sandbox ``seconds`` from ``start`` (None: still running)."""
    made = store.create(owner="acme", model={"slug": f"acme/m{n}", "provider_model_id": f"m{n}"},
                        tasks=["clinicalqa@0"], tier="official", model_spec_hash=f"{n:064x}", quota=None,
                        package_sha256="ab" * 32, now=start - 10)
    sid = made.submission.id
    store.transition(sid, "awaiting_approval", now=start - 5)
    store.transition(sid, "queued", now=start - 1)
    store.transition(sid, "running", now=start)
    if seconds is not None:
        store.transition(sid, end_state, "package failed", now=start + seconds)


@pytest.fixture
def store(tmp_path):
    made = SubmissionStore.open(f"sqlite:///{tmp_path / 'submissions.sqlite3'}")
    yield made
    made.close()


def test_failed_runs_count_and_past_the_budget_is_quota_exceeded_with_the_reset_date(store):
    now = time.time()
    policy = SubmissionPolicy(limits=Limits(sandbox_seconds_per_30_days=3600))
    official_run(store, 1, now - 40 * DAY, 10_000)  # outside the window: not counted
    official_run(store, 2, now - 10 * DAY, 3000, "failed")
    check_sandbox_budget(store, policy, "acme", now)  # 3000 of 3600
    official_run(store, 3, now - 2 * DAY, 1000, "evaluated")
    with pytest.raises(SubmissionRefused) as refused:
        check_sandbox_budget(store, policy, "acme", now)
    assert refused.value.status == 429 and refused.value.code == "quota_exceeded"
    reset = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 10 * DAY + SANDBOX_WINDOW_S))
    assert "used 4000 of its 3600 sandbox-seconds" in str(refused.value) and reset in str(refused.value)
    check_sandbox_budget(store, SubmissionPolicy(owners={"acme": Owner(sandbox_seconds_per_30_days=5000)}),
                         "acme", now)  # a per-owner budget in submissions.toml
    check_sandbox_budget(store, policy, "someone-else", now)


def test_a_run_still_in_the_sandbox_counts_until_now(store):
    now = time.time()
    official_run(store, 1, now - 7200, None)
    with pytest.raises(SubmissionRefused, match="used 7200 of its 3600"):
        check_sandbox_budget(store, SubmissionPolicy(limits=Limits(sandbox_seconds_per_30_days=3600)), "acme", now)


def test_approve_prints_the_effective_limits_not_the_requested_ones(tmp_path):
    from support.commands import run_medbench
    from medbench.layout import DataDir
    from medbench.submissions import Resources

    data = tmp_path / "data"
    data.mkdir()
    made = SubmissionStore.for_data(DataDir(data))
    sid = made.create(owner="acme", model={"slug": "acme/m1", "provider_model_id": "m1"}, tasks=["clinicalqa@0"],
                      tier="official", model_spec_hash="0" * 64, quota=None, package_sha256="ab" * 32,
                      resources=Resources("cpu", 160.0, 1440.0)).submission.id
    made.transition(sid, "awaiting_approval")
    made.close()
    out = run_medbench("submissions", "approve", sid, "--reason", "ok", data=data).stdout
    assert "effective sandbox limits: pool cpu; run: memory 4 GiB, wall 900 s" in out, out
    assert "(asked: 160 GiB, 1440 min)" in out
