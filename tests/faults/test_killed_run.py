"""A SIGKILLed materialization no longer leaves its Dagster run STARTED forever.

The fault: every SIGKILL of a materialization left its run STARTED; with the queued coordinator's
``max_concurrent_runs: 2`` two such runs blocked every run launched from the UI. Here a real
process starts a run with the launcher tags in a scratch DAGSTER_HOME and is SIGKILLed mid-run;
``fail_dead_runs`` (what ``recover`` calls before a materialization) reports it FAILURE.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.paths import REPO, SUPPORT

pytestmark = pytest.mark.slow



def test_a_killed_run_is_reported_failed(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    marker = tmp_path / "started"
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, str(SUPPORT / "killed_run_driver.py"), str(marker)],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

    import dagster as dg

    from pipelines.dagster.stale_runs import fail_dead_runs, recover
    from medbench.layout import DataDir

    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as instance:
        (run,) = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.STARTED  # what the kill leaves behind
        assert run.tags["medbench/pid"] == str(proc.pid)
        assert fail_dead_runs(instance) == [run.run_id]
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
        assert recover(instance, DataDir(tmp_path / "data")) == "recovered: nothing to do"


def test_recover_removes_a_killed_writers_temp_folder(tmp_path: Path) -> None:
    import dagster as dg

    from pipelines.dagster.stale_runs import recover
    from medbench.layout import DataDir

    data = DataDir(tmp_path / "data")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    temp = data.root / "snapshots" / "clinicalqa" / f".abc.{proc.pid}.1.tmp"
    temp.mkdir(parents=True)
    (temp / "part.parquet").write_bytes(b"partial")
    old = time.time() - 3600
    os.utime(temp, (old, old))
    with dg.DagsterInstance.ephemeral() as instance:
        assert recover(instance, data) == "recovered: removed 1 temporary file of killed writers"
    assert not temp.exists()
