"""Dead runs of this host are reported failed; live ones and other hosts' are left alone (fast
units over an in-memory instance; the SIGKILL end to end is tests/faults/test_killed_run.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import dagster as dg

from pipelines.dagster.stale_runs import HOST_TAG, PID_TAG, fail_dead_runs, recover, run_tags
from medbench.layout import DataDir


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _run(instance: dg.DagsterInstance, tags: dict[str, str], status=dg.DagsterRunStatus.STARTED) -> str:
    run = dg.DagsterRun(job_name="__ASSET_JOB", run_id=str(uuid.uuid4()), status=status, tags=tags)
    instance.add_run(run)
    return run.run_id


def test_only_this_hosts_dead_runs_are_failed(tmp_path: Path) -> None:
    with dg.DagsterInstance.ephemeral() as instance:
        here = run_tags()
        dead = _run(instance, {**here, PID_TAG: str(_dead_pid())})
        never = _run(instance, {**here, PID_TAG: str(_dead_pid())}, dg.DagsterRunStatus.NOT_STARTED)
        alive = _run(instance, here)
        parent = _run(instance, {**here, PID_TAG: str(os.getppid())})
        elsewhere = _run(instance, {HOST_TAG: "another-host", PID_TAG: str(_dead_pid())})
        untagged = _run(instance, {})
        assert sorted(fail_dead_runs(instance)) == sorted([dead, never])
        status = {r: instance.get_run_by_id(r).status for r in (dead, never, alive, parent, elsewhere, untagged)}
        assert status[dead] == status[never] == dg.DagsterRunStatus.FAILURE
        assert {status[r] for r in (alive, parent, elsewhere, untagged)} == {dg.DagsterRunStatus.STARTED}
        assert fail_dead_runs(instance) == []  # idempotent
        assert recover(instance, DataDir(tmp_path)) == "recovered: nothing to do"


def test_the_dead_runs_sensor_reports_a_dead_local_run_failed(tmp_path, monkeypatch):
    """The sensor (for when the daemon runs) does what the CLI does at start: a run of this host whose
    process is gone is reported failed."""
    import dagster as dg

    from pipelines.dagster import stale_runs
    from pipelines.dagster.sensors import dead_runs_sensor

    calls = []
    monkeypatch.setattr(stale_runs, "fail_dead_runs", lambda instance: calls.append(instance) or ["abc123"])
    with dg.instance_for_test() as instance:
        result = dead_runs_sensor(dg.build_sensor_context(instance=instance))
    assert calls and "abc123" in result.skip_message
