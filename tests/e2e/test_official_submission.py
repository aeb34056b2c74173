"""An official submission end to end on the demo data: submit with a token and a package sha256,
upload the wheel, approve, run it in the sandbox, publish an official row; a hostile package's
submission ends ``failed`` with a one-line reason, publishes nothing and is not charged."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.submission_desk import SubmissionDesk
from medbench.registry import installed_plugins
from pipelines.engine.specs import load_specs
from pipelines.engine.submission_check import SubmissionChecker
from pipelines.engine.submission_policy import Limits, SubmissionPolicy
from support.commands import run_medbench
from support.wheels import build_example_wheel, build_wheel
from medbench.layout import DataDir
from medbench.submissions import SubmissionStore

pytestmark = pytest.mark.slow

REV = "0123456789abcdef0123456789abcdef01234567"
POLICY = SubmissionPolicy(limits=Limits(quota_per_week=20, rate_limit=1000))


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("official-submission") / "data"
    run_medbench("materialize", "--demo", "--task", "clinicalqa@0", "--model", "medbench/random", data=root)
    return root


def submit_and_upload(data: Path, slug: str, wheel: Path) -> tuple[str, SubmissionStore]:
    """POST the official submission, PUT its wheel, as the owner ``acme`` would; its id."""
    store = SubmissionStore.for_data(DataDir(data))
    _, secret = store.tokens.create("acme", ["submit"])
    desk = SubmissionDesk(store=store, check=SubmissionChecker(load_specs(None, installed_plugins()), store,
                                                                lambda: POLICY),
                          quota_for=POLICY.quota_for, rate_limit=1000)
    auth = {"authorization": f"Bearer {secret}"}
    model = {"slug": slug, "name": slug, "type": "llm", "provider_model_id": slug.split("/")[1], "revision": REV,
             "backend": "transformers", "settings": {"model": slug}}
    with TestClient(create_app(data, desk=desk)) as client:
        made = client.post("/v1/submissions", headers=auth, json={
            "model": model, "tasks": ["clinicalqa@0"], "tier": "official",
            "package_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()})
        assert made.status_code == 201 and made.json()["state"] == "awaiting_package", made.text
        sid = made.json()["id"]
        uploaded = client.put(f"/v1/submissions/{sid}/package", headers=auth, content=wheel.read_bytes())
        assert uploaded.status_code == 200 and uploaded.json()["state"] == "awaiting_approval", uploaded.text
    run_medbench("submissions", "approve", sid, "--reason", "package reviewed", data=data)
    return sid, store


def test_a_submitted_package_becomes_an_official_row(data, tmp_path):
    wheel = build_example_wheel(tmp_path)
    sid, store = submit_and_upload(data, "acme/m1", wheel)
    ran = run_medbench("official", "run-submission", sid, data=data)
    assert f"submission {sid}: evaluated" in ran.stdout
    final = store.get(sid)
    assert [h.state for h in final.history][-3:] == ["queued", "running", "evaluated"] and len(final.run_ids) == 1
    with TestClient(create_app(data)) as client:
        rows = client.get("/v1/leaderboard", params={"task": "clinicalqa@0", "tier": "official"}).json()["rows"]
        assert [(r["model"]["slug"], r["run_id"]) for r in rows] == [("acme/m1", final.run_ids[0])]
        provenance = client.get(f"/v1/results/{final.run_ids[0]}").json()["provenance"]
        assert provenance["submitted_by"] == "acme" and provenance["submission_id"] == sid
    # a later publish from the specs alone (which do not hold acme/m1) keeps the submitted model's row
    run_medbench("materialize", "--demo", "--task", "clinicalqa@0", "--model", "medbench/random", data=data)
    with TestClient(create_app(data)) as client:
        model = client.get("/v1/models/acme/m1").json()
        assert [e["run_id"] for e in model["evaluations"]] == final.run_ids
        rows = client.get("/v1/leaderboard", params={"task": "clinicalqa@0", "tier": "official"}).json()["rows"]
        assert [r["run_id"] for r in rows] == final.run_ids
    store.close()


def test_a_hostile_package_fails_its_submission_publishes_nothing_and_is_not_charged(data, tmp_path):
    wheel = build_wheel(tmp_path, "import socket\n\ndef predict(instances, context):\n"
                                  "    socket.create_connection(('pypi.org', 443), timeout=5)\n    yield {}\n")
    before = sorted(p.name for p in (data / "artifacts").iterdir())
    pointer = (data / "warehouse" / "CURRENT").read_text()
    sid, store = submit_and_upload(data, "acme/m2", wheel)
    charged_while_open = store.charged("acme")
    ran = run_medbench("official", "run-submission", sid, data=data, check=False)
    assert ran.returncode == 1 and f"submission {sid}: failed (the package raised " in ran.stdout
    final = store.get(sid)
    assert final.state == "failed" and "\n" not in final.state_reason and final.run_ids == []
    assert store.charged("acme") == charged_while_open - 1
    assert sorted(p.name for p in (data / "artifacts").iterdir()) == before
    assert (data / "warehouse" / "CURRENT").read_text() == pointer
    store.close()


def test_medbench_submit_sends_the_sha256_and_uploads_the_package(data, tmp_path):
    """The model author's path: ``medbench submit --tier official --package WHEEL`` against a real server."""
    import re

    from support.live_server import medbench_serve

    secret = run_medbench("tokens", "create", "--owner", "acme", "--scope", "submit", data=data).stdout.strip()
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n    return iter(())\n", name="acme_m3")
    spec = tmp_path / "acme-m3.toml"
    spec.write_text(f'slug = "acme/m3"\nname = "M3"\ntype = "llm"\nprovider_model_id = "m3"\nrevision = "{REV}"\n'
                    'backend = "transformers"\n\n[settings]\nmodel = "acme/m3"\n')
    with medbench_serve(data, tmp_path / "server.log", ready_path="/v1/submissions") as server:
        sent = run_medbench("submit", str(spec), "--task", "clinicalqa@0", "--tier", "official", "--package", str(wheel),
                            "--api-url", server.base, data=data, env={"MEDBENCH_TOKEN": secret})
        sid = re.search(r"^submission ([0-9a-f]{12}): awaiting_approval", sent.stdout, re.M).group(1)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    store = SubmissionStore.for_data(DataDir(data))
    assert store.get(sid).package_sha256 == sha
    assert (data / "packages" / sha / wheel.name).read_bytes() == wheel.read_bytes()
    store.close()


def official_rows(data: Path, slug: str) -> list[str]:
    with TestClient(create_app(data)) as client:
        rows = client.get("/v1/leaderboard", params={"task": "clinicalqa@0", "tier": "official"}).json()["rows"]
    return [r["run_id"] for r in rows if r["model"]["slug"] == slug]


def test_submissions_run_evaluates_an_official_submission_in_the_sandbox(data, tmp_path, instance):
    """Without a daemon: ``medbench submissions run`` runs the package, not a baseline evaluation, as a
    ``run_official_submission`` run recorded in the data directory's instance."""
    import dagster as dg

    from pipelines.dagster.submission_flow import SUBMISSION_TAG

    sid, store = submit_and_upload(data, "acme/m4", build_example_wheel(tmp_path))
    ran = run_medbench("submissions", "run", data=data)
    final = store.get(sid)
    assert final.state == "evaluated", (final.state_reason, ran.stdout[-2000:], ran.stderr[-2000:])
    assert "evaluated in the sandbox" in final.state_reason and len(final.run_ids) == 1
    assert not (data / "submitted-specs" / "models" / "acme" / "m4.toml").exists()  # no baseline spec was written
    assert official_rows(data, "acme/m4") == final.run_ids
    [run] = instance.get_runs(filters=dg.RunsFilter(tags={SUBMISSION_TAG: sid}))
    assert run.job_name == "run_official_submission" and run.status == dg.DagsterRunStatus.SUCCESS
    assert run_medbench("submissions", "run", data=data).stdout.startswith("no approved submission")
    store.close()


@pytest.fixture
def instance(data, monkeypatch):
    """The data directory's own Dagster instance, as the daemon's sensors and runs would open it."""
    import dagster as dg

    monkeypatch.setenv("MEDBENCH_DATA", str(data))
    monkeypatch.setenv("DAGSTER_HOME", str(data / "dagster"))
    with dg.DagsterInstance.get() as opened:
        yield opened


def tick(instance):
    """One evaluation of the ``submissions`` sensor, as the daemon makes it."""
    import dagster as dg

    from pipelines.dagster.definitions import defs

    context = dg.build_sensor_context(instance_ref=instance.get_ref(), definitions=defs)
    with dg.partition_loading_context(dynamic_partitions_store=instance):
        return defs.resolve_sensor_def("submissions").evaluate_tick(context)


def test_the_sensor_launches_the_official_job_and_the_submission_ends_evaluated(data, tmp_path, instance):
    from pipelines.dagster.definitions import defs
    from pipelines.dagster.submission_flow import SUBMISSION_TAG

    sid, store = submit_and_upload(data, "acme/m5", build_example_wheel(tmp_path))
    [request] = tick(instance).run_requests
    assert request.job_name == "run_official_submission" and request.tags[SUBMISSION_TAG] == sid
    run = defs.resolve_job_def(request.job_name).execute_in_process(run_config=request.run_config,
                                                                     tags=request.tags, instance=instance)
    assert run.success
    assert tick(instance).run_requests == []  # evaluated: nothing more to request, no second run
    final = store.get(sid)
    assert final.state == "evaluated", final.state_reason
    assert [h.state for h in final.history][-3:] == ["queued", "running", "evaluated"]
    assert official_rows(data, "acme/m5") == final.run_ids and len(final.run_ids) == 1
    store.close()


def test_an_official_run_that_dies_fails_its_submission(data, tmp_path, instance):
    import dagster as dg

    from pipelines.dagster.definitions import defs
    from pipelines.dagster.submission_jobs import submission_run_failures

    sid, store = submit_and_upload(data, "acme/m6", build_example_wheel(tmp_path))
    [request] = tick(instance).run_requests
    run = instance.create_run_for_job(defs.resolve_job_def(request.job_name), run_config=request.run_config,
                                      tags=request.tags, status=dg.DagsterRunStatus.STARTED)
    assert tick(instance).run_requests == [] and store.get(sid).state == "queued"  # its run is under way
    instance.report_run_failed(run, "the process running it was killed")  # as the dead-runs sensor does
    run = instance.get_run_by_id(run.run_id)
    [failure] = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    submission_run_failures(dg.build_run_status_sensor_context(
        sensor_name="submission_run_failures", dagster_event=failure.dagster_event, dagster_instance=instance,
        dagster_run=run).for_run_failure())
    final = store.get(sid)
    assert final.state == "failed" and final.state_reason == f"run {run.run_id} died"
    store.close()


def test_an_official_submission_left_running_by_a_killed_submissions_run_fails_with_run_died(data, tmp_path,
                                                                                             instance):
    import subprocess

    import dagster as dg

    from pipelines.dagster.definitions import defs
    from pipelines.dagster.stale_runs import HOST_TAG, PID_TAG, run_tags
    from pipelines.dagster.submission_jobs import official_run_request

    sid, store = submit_and_upload(data, "acme/m7", build_example_wheel(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()  # the `submissions run` that was running this package, then was killed
    request = official_run_request(store.get(sid))
    run = instance.create_run_for_job(defs.resolve_job_def(request.job_name), run_config=request.run_config,
                                      tags={**request.tags, HOST_TAG: run_tags()[HOST_TAG], PID_TAG: str(gone.pid)},
                                      status=dg.DagsterRunStatus.STARTED)
    store.transition(sid, "running", "package runs in the sandbox")
    run_medbench("submissions", "run", data=data)
    final = store.get(sid)
    assert final.state == "failed" and final.state_reason == f"run {run.run_id} died"
    store.close()
