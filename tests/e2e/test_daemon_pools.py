"""The maintainer's path with the daemon: a backfill launched outside the CLI (``dagster job
backfill``, as the UI's "Launch backfill" does) is queued by the instance's run coordinator with each
run's ``medbench/pool`` tag, so the daemon's queued coordinator runs at most the pool's limit at once.

Two CPU evaluations with the ``cpu`` limit set to 1 (and ``max_concurrent_runs`` 4, so nothing but
the pool keeps them apart): both runs carry ``medbench/pool=cpu``, both succeed, and their run
intervals never overlap. Without the tag the daemon would start both in the same dequeue tick."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
import yaml

from support.paths import REPO
from support.processes import stop_group

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
PAIRS = ["vitaldb-ioh@0|medbench/linear-extrapolation", "vitaldb-ioh@0|medbench/neg-last-map"]


def _home(path: Path) -> Path:
    """The checkout's dagster.yaml with the cpu pool limited to one run."""
    config = yaml.safe_load((REPO / "dagster.yaml").read_text())
    for entry in config["concurrency"]["runs"]["tag_concurrency_limits"]:
        if entry["key"] == "medbench/pool" and entry["value"] == "cpu":
            entry["limit"] = 1
    config["run_coordinator"].setdefault("config", {})["dequeue_interval_seconds"] = 1
    path.mkdir(parents=True)
    (path / "dagster.yaml").write_text(yaml.safe_dump(config))
    return path


def _runs(home: Path) -> list:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return list(instance.get_run_records())


def test_a_backfill_from_outside_the_cli_is_held_to_its_pool(demo_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(demo_data, data, ignore=shutil.ignore_patterns("dagster"))
    home = _home(tmp_path / "dagster-home")
    env = {**os.environ, "DAGSTER_HOME": str(home), "MEDBENCH_DATA": str(data), "PYTHONUNBUFFERED": "1"}
    # The partitions exist in the instance (what the evaluation_partitions_sensor would add).
    sync = subprocess.run([sys.executable, "-c", "import dagster as dg\n"
                           "from pipelines.dagster.partitions import sync_evaluation_partitions\n"
                           "from pipelines.engine.specs import load_specs\n"
                           "with dg.DagsterInstance.get() as i: sync_evaluation_partitions(i, load_specs())"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert sync.returncode == 0, sync.stderr
    log = open(tmp_path / "daemon.log", "w")
    daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"], cwd=REPO, env=env,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        backfill = subprocess.run(
            [str(BIN / "dagster"), "job", "backfill", "-w", "workspace.yaml", "-j", "evaluate_vitaldb_ioh",
             "--partitions", ",".join(PAIRS), "--noprompt"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert backfill.returncode == 0, backfill.stdout + backfill.stderr
        records = _wait_for_runs(home, daemon, tmp_path / "daemon.log")
    finally:
        stop_group(daemon)
        log.close()
    assert sorted(r.dagster_run.tags["dagster/partition"] for r in records) == sorted(PAIRS)
    assert all(r.dagster_run.tags.get("medbench/pool") == "cpu" for r in records), [r.dagster_run.tags for r in records]
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in records), (
        [r.dagster_run.status for r in records], (tmp_path / "daemon.log").read_text()[-3000:])
    first, second = sorted(records, key=lambda r: r.start_time)
    assert first.end_time <= second.start_time, json.dumps(
        [(r.start_time, r.end_time) for r in (first, second)])


def _wait_for_runs(home: Path, daemon: subprocess.Popen, log: Path, timeout: float = 420) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            pytest.fail(f"dagster-daemon exited {daemon.returncode}:\n{log.read_text()[-4000:]}", pytrace=False)
        records = _runs(home)
        if len(records) == len(PAIRS) and all(r.dagster_run.is_finished for r in records):
            return records
        time.sleep(2)
    pytest.fail(f"the backfill's runs did not finish in {timeout}s: {[(r.dagster_run.status, r.dagster_run.tags) for r in _runs(home)]}\n"
                f"{log.read_text()[-4000:]}", pytrace=False)
