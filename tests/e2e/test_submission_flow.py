"""Submissions through evaluation: a copy of the materialized demo gets submissions over the HTTP
route (a real token, the validator ``medbench serve`` builds), a maintainer approves or rejects them
(the CLI, or the Dagster job ``review_submission``), and they are evaluated by ``medbench submissions
run`` or by the ``submissions`` sensor on a real Dagster instance, up to the leaderboard. An openai
model on the demo's loopback endpoint ``demo-sim`` answers as the simulated ``english`` model, so its
accuracy must be exactly the replay model ``medbench-sim/english``'s."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import httpx
import pytest
from litestar.testing import TestClient

from api.app import create_app
from bench._servers import LOOPBACK, free_port, running
from pipelines.cli.demo_endpoint import configure
from pipelines.cli.submission_desk import build_desk
from pipelines.dagster.definitions import defs
from pipelines.dagster.submission_flow import SUBMISSION_TAG
from pipelines.dagster.submission_jobs import submission_run_failures
from pipelines.engine.submission_policy import load_policy
from pipelines.datasets.clinicalqa.simulated_server import SimulatedChatServer
from support.commands import run_medbench
from support.paths import REPO
from medbench.layout import DataDir
from medbench.submissions import SubmissionStore

TASK = "clinicalqa@0"
SIM = {"slug": "acme/sim-english", "name": "Acme sim", "type": "llm", "provider_model_id": "acme-sim-english",
       "revision": "2026-12", "backend": "openai", "settings": {"endpoint": "demo-sim", "model": "english"}}
HUB = {"slug": "acme/tiny-hub", "name": "Acme tiny", "type": "llm", "provider_model_id": "acme-tiny-hub",
       "revision": "0123456789abcdef0123456789abcdef01234567", "backend": "transformers",
       "settings": {"model": "acme/tiny-hub"}}


@pytest.fixture
def data(demo_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "data"
    shutil.copytree(demo_data, root, ignore=shutil.ignore_patterns("dagster"))
    home = root / "dagster"
    home.mkdir()
    shutil.copyfile(REPO / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("MEDBENCH_DATA", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no internet here, whatever this machine has
    with SimulatedChatServer() as server:
        configure(DataDir(root), server.base_url)
        yield root


def submit(root: Path, model: dict) -> str:
    store = SubmissionStore.for_data(DataDir(root))
    _, secret = store.tokens.create("acme", ["submit"])
    with TestClient(create_app(root, desk=build_desk(root))) as client:
        answer = client.post("/v1/submissions", json={"model": model, "tasks": [TASK]},
                             headers={"authorization": f"Bearer {secret}"})
    assert answer.status_code == 201, answer.text
    assert answer.json()["state"] == "awaiting_approval"
    return answer.json()["id"]


def state(root: Path, sub_id: str):
    return SubmissionStore.for_data(DataDir(root)).get(sub_id)


def leaderboard(root: Path) -> dict[str, float]:
    with TestClient(create_app(root)) as client:
        rows = client.get("/v1/leaderboard", params={"task": TASK}).json()["rows"]
    return {r["model"]["slug"]: (r["metric"]["value"], r["tier"], r["run_id"]) for r in rows}


def tick(instance: dg.DagsterInstance):
    """One evaluation of the ``submissions`` sensor, as the daemon makes it (partitions from the instance)."""
    context = dg.build_sensor_context(instance_ref=instance.get_ref(), definitions=defs)
    with dg.partition_loading_context(dynamic_partitions_store=instance):
        return defs.resolve_sensor_def("submissions").evaluate_tick(context)


def review(instance: dg.DagsterInstance, sub_id: str, decision: str, reason: str) -> None:
    config = {"ops": {"review_submission_op": {"config": {"submission_id": sub_id, "decision": decision,
                                                         "reason": reason}}}}
    result = defs.resolve_job_def("review_submission").execute_in_process(run_config=config, instance=instance)
    assert result.success


def test_an_approved_openai_submission_is_evaluated_by_submissions_run_and_ranked(data: Path) -> None:
    sub_id = submit(data, SIM)
    run_medbench("submissions", "approve", sub_id, "--reason", "demo model", data=data)
    proc = run_medbench("submissions", "run", data=data)
    sub = state(data, sub_id)
    assert sub.state == "evaluated", (sub.state_reason, proc.stdout[-2000:], proc.stderr[-2000:])
    assert [h.state for h in sub.history][-3:] == ["queued", "running", "evaluated"]
    spec = data / "submitted-specs" / "models" / "acme" / "sim-english.toml"
    assert 'endpoint = "demo-sim"' in spec.read_text() and "http" not in spec.read_text()
    board = leaderboard(data)
    value, tier, run_id = board["acme/sim-english"]
    assert sub.run_ids == [run_id] and tier == "baseline"
    assert value == board["medbench-sim/english"][0]  # the loopback answered as the simulated model
    assert run_medbench("submissions", "run", data=data).stdout.startswith("no approved submission")


def test_the_sensor_launches_the_runs_and_follows_them_to_evaluated(data: Path) -> None:
    sub_id = submit(data, SIM)
    with dg.DagsterInstance.get() as instance:
        review(instance, sub_id, "approve", "looks fine")
        assert state(data, sub_id).state == "queued"
        result = tick(instance)
        [request] = result.run_requests
        assert request.tags[SUBMISSION_TAG] == sub_id and request.partition_key == f"{TASK}|acme/sim-english"
        for added in result.dynamic_partitions_requests:
            instance.add_dynamic_partitions(added.partitions_def_name, list(added.partition_keys))
        job = defs.resolve_job_def(request.job_name)
        run = job.execute_in_process(partition_key=request.partition_key, tags=request.tags, instance=instance)
        assert run.success
        # running from the moment its run started, not from the next tick (issue #40)
        assert state(data, sub_id).state == "running" and run.run_id in state(data, sub_id).state_reason
        tick(instance)
        assert state(data, sub_id).state == "running"  # evaluated only once published: its run link answers then
        assert defs.resolve_job_def("publish").execute_in_process(instance=instance).success
        tick(instance)
    sub = state(data, sub_id)
    assert sub.state == "evaluated", sub.state_reason
    assert [h.state for h in sub.history][-3:] == ["queued", "running", "evaluated"]
    assert run.run_id in sub.history[-2].reason and len(sub.run_ids) == 1
    with TestClient(create_app(data)) as client:
        assert client.get(f"/v1/results/{sub.run_ids[0]}").status_code == 200


def test_a_run_that_dies_fails_its_submission_through_run_monitoring(data: Path) -> None:
    sub_id = submit(data, SIM)
    with dg.DagsterInstance.get() as instance:
        review(instance, sub_id, "approve", "ok")
        [request] = tick(instance).run_requests
        job = defs.resolve_job_def(request.job_name)
        run = instance.create_run_for_job(job, tags=request.tags, status=dg.DagsterRunStatus.STARTED)
        tick(instance)
        assert state(data, sub_id).state == "running"
        instance.report_run_failed(run, "the process running it was killed")  # as the dead-runs sensor does
        run = instance.get_run_by_id(run.run_id)
        [failure] = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        context = dg.build_run_status_sensor_context(
            sensor_name="submission_run_failures", dagster_event=failure.dagster_event, dagster_instance=instance,
            dagster_run=run).for_run_failure()
        submission_run_failures(context)
    sub = state(data, sub_id)
    assert sub.state == "failed" and sub.state_reason.endswith(f"run {run.run_id} died")


def test_a_hub_model_without_internet_is_queued_then_fails_with_the_reason(data: Path) -> None:
    sub_id = submit(data, HUB)
    run_medbench("submissions", "approve", sub_id, "--reason", "try it", data=data)
    assert state(data, sub_id).state == "queued"
    proc = run_medbench("submissions", "run", data=data, check=False)
    sub = state(data, sub_id)
    assert proc.returncode == 1 and sub.state == "failed"
    assert sub.state_reason.startswith(f"{TASK}|acme/tiny-hub: ") and len(sub.state_reason.splitlines()) == 1
    assert "acme/tiny-hub" not in leaderboard(data)


def test_a_maintainer_rejects_with_a_reason_in_the_dagster_job(data: Path) -> None:
    sub_id = submit(data, SIM)
    with dg.DagsterInstance.get() as instance:
        review(instance, sub_id, "reject", "not a medical model")
        bad = defs.resolve_job_def("review_submission").execute_in_process(
            instance=instance, raise_on_error=False,
            run_config={"ops": {"review_submission_op": {"config": {"submission_id": sub_id, "decision": "approve",
                                                                   "reason": "changed my mind"}}}})
    sub = state(data, sub_id)
    assert sub.state == "rejected" and sub.state_reason == "not a medical model"
    assert not bad.success  # a rejected submission cannot be approved afterwards


def test_medbench_demo_serves_its_loopback_endpoint_and_stops_it_with_the_demo(demo_data: Path,
                                                                                tmp_path: Path) -> None:
    root = tmp_path / "demo"
    shutil.copytree(demo_data, root)
    port = free_port()
    command = [sys.executable, "-m", "pipelines.cli.main", "demo", "--host", LOOPBACK, "--port", str(port)]
    env = {"MEDBENCH_DATA": str(root), "DAGSTER_HOME": str(root / "dagster"), "MEDBENCH_PUBLIC_URL": ""}
    with running(command, port, "/healthz", tmp_path / "demo.log", env=env, start_timeout_s=300) as demo:
        url = load_policy(data=DataDir(root)).endpoints["demo-sim"].base_url
        assert url.startswith(f"http://{LOOPBACK}:") and url in demo.log()
        assert "english" in {m["id"] for m in httpx.get(f"{url}/models").json()["data"]}
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/models", timeout=5)


def test_a_submission_left_running_by_a_killed_submissions_run_fails_with_run_died(data: Path) -> None:
    import subprocess

    from pipelines.dagster.stale_runs import HOST_TAG, PID_TAG, run_tags

    sub_id = submit(data, SIM)
    run_medbench("submissions", "approve", sub_id, "--reason", "ok", data=data)
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process that ran this submission's run, then was killed
    with dg.DagsterInstance.get() as instance:
        job = defs.resolve_job_def("evaluate_clinicalqa")
        tags = {SUBMISSION_TAG: sub_id, HOST_TAG: run_tags()[HOST_TAG], PID_TAG: str(gone.pid)}
        run = instance.create_run_for_job(job, tags=tags, status=dg.DagsterRunStatus.STARTED)
    SubmissionStore.for_data(DataDir(data)).transition(sub_id, "running", "evaluating in-process")
    run_medbench("submissions", "run", data=data)
    sub = state(data, sub_id)
    assert sub.state == "failed" and sub.state_reason == f"run {run.run_id} died"
