"""Official submissions never take the baseline path, and baseline ones never the sandbox: ``medbench
submissions run`` and the ``submissions`` sensor hand each approved submission to exactly one of
``submission_flow.prepare`` (baseline) or ``pipelines.official.submission.run_submission`` (official),
and the store's transitions keep one official submission from running twice."""

from __future__ import annotations

import argparse
from pathlib import Path

import dagster as dg
import pytest

import pipelines.official.submission as official
from pipelines.cli import submissions_run
from pipelines.dagster import submission_flow, submission_jobs
from medbench.layout import DataDir
from medbench.submissions import IllegalTransition, SubmissionStore

REV = "0123456789abcdef0123456789abcdef01234567"


def approved(store: SubmissionStore, slug: str, tier: str) -> str:
    model = {"slug": slug, "name": slug, "type": "llm", "provider_model_id": slug.split("/")[1], "revision": REV,
             "backend": "transformers", "settings": {"model": slug}}
    sub = store.create(owner="acme", model=model, tasks=["clinicalqa@0"], tier=tier, model_spec_hash=slug,
                       quota=None, package_sha256="ab" * 32 if tier == "official" else None).submission
    if tier == "official":
        store.transition(sub.id, "awaiting_approval", "package uploaded")
    store.transition(sub.id, "queued", "approved")
    return sub.id


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEDBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "data" / "dagster"))
    opened = SubmissionStore.for_data(DataDir(tmp_path / "data"))
    yield opened
    opened.close()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Who was handed which submission: the baseline path's prepare, or the sandbox's run_submission."""
    seen: dict[str, list[str]] = {"baseline": [], "official": []}

    def fake_prepare(store, sub, data, load_specs, log=print):
        seen["baseline"].append(sub.id)
        submission_flow.settle(store, sub, [], log)  # "no evaluation was run": failed, settled here
        return None

    def fake_run_submission(specs, data, store, sub_id, log):
        seen["official"].append(sub_id)
        store.transition(sub_id, "running", "in the sandbox")
        return store.transition(sub_id, "evaluated", "evaluated in the sandbox", run_ids=[f"official-{sub_id}"])

    monkeypatch.setattr(submission_flow, "prepare", fake_prepare)
    monkeypatch.setattr(submission_jobs, "prepare", fake_prepare)
    monkeypatch.setattr(official, "run_submission", fake_run_submission)
    return seen


def test_submissions_run_hands_official_submissions_to_the_sandbox_only(store, calls, capsys):
    baseline = approved(store, "acme/base", "baseline")
    sandboxed = approved(store, "acme/pkg", "official")
    code = submissions_run.run(argparse.Namespace(limit=100))
    assert calls == {"baseline": [baseline], "official": [sandboxed]}
    assert store.get(sandboxed).state == "evaluated" and store.get(sandboxed).run_ids == [f"official-{sandboxed}"]
    assert store.get(baseline).state == "failed" and code == 1  # the fake baseline path ran nothing
    assert f"submission {sandboxed}: acme/pkg on clinicalqa@0 (official)" in capsys.readouterr().out


def test_the_sensor_requests_one_official_job_run_and_no_baseline_evaluation(store, calls):
    sandboxed = approved(store, "acme/pkg", "official")
    sensor = submission_jobs.submissions_sensor([])
    with dg.DagsterInstance.ephemeral() as instance:
        result = sensor.evaluate_tick(dg.build_sensor_context(instance=instance))
    [request] = result.run_requests
    assert request.job_name == "run_official_submission" and request.run_key == f"{sandboxed}:official"
    assert request.tags[submission_flow.SUBMISSION_TAG] == sandboxed and request.tags["medbench/pool"] == "cpu"
    assert request.run_config == {"ops": {"run_official_submission_op": {"config": {"submission_id": sandboxed}}}}
    assert calls == {"baseline": [], "official": []} and store.get(sandboxed).state == "queued"


def test_an_official_submission_taken_by_another_run_is_not_run_again(store, calls, tmp_path):
    sub_id = approved(store, "acme/pkg", "official")
    data = DataDir(tmp_path / "data")
    first = submission_flow.run_official(store, sub_id, data, lambda: None, log=lambda line: None)
    again = submission_flow.run_official(store, sub_id, data, lambda: None, log=lambda line: None)
    assert first.state == "evaluated" and again is None and calls["official"] == [sub_id]


def test_a_move_lost_to_another_process_leaves_the_submission_to_it(store, monkeypatch, tmp_path):
    sub_id = approved(store, "acme/pkg", "official")

    def raced(specs, data, store_, sid, log):  # the other process moved it between our read and our move
        store_.transition(sid, "running", "the other process")
        raise IllegalTransition(f"submission {sid} is running; it cannot move to running")

    monkeypatch.setattr(official, "run_submission", raced)
    assert submission_flow.run_official(store, sub_id, DataDir(tmp_path / "data"), lambda: None,
                                        log=lambda line: None) is None
    assert store.get(sub_id).state == "running" and store.get(sub_id).state_reason == "the other process"


def test_an_error_before_the_package_ends_fails_the_submission_in_one_line(store, monkeypatch, tmp_path):
    sub_id = approved(store, "acme/pkg", "official")

    def unavailable(specs, data, store_, sid, log):
        store_.transition(sid, "running", "in the sandbox")
        raise RuntimeError("bwrap is not installed: install Debian's bubblewrap\n(second line)")

    monkeypatch.setattr(official, "run_submission", unavailable)
    final = submission_flow.run_official(store, sub_id, DataDir(tmp_path / "data"), lambda: None,
                                         log=lambda line: None)
    assert final.state == "failed" and final.state_reason == "bwrap is not installed: install Debian's bubblewrap"
