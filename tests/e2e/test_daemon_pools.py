"""The maintainer's path with the daemon: runs made outside the CLI are held to their pool.

Two CPU evaluations with the ``cpu`` limit set to 1 (and ``max_concurrent_runs`` 4, so nothing but
the pool keeps them apart), made two ways:

* ``dagster job backfill`` (one run per partition): the instance's run coordinator queues each run
  with its ``medbench/pool`` tag;
* the UI's backfill (the ``launchPartitionBackfill`` mutation, one ranged run): the ranged run queues
  one run per partition that needs work, tagged the same way.

Either way both evaluation runs carry ``medbench/pool=cpu``, both succeed, and their run intervals
never overlap. Without the tag the daemon would start both in the same dequeue tick."""

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

from bench._dagster_ui import DagsterUI, sync_partitions
from pipelines.dagster import engine_calls as engine
from pipelines.dagster.child_runs import PARENT_TAG
from support.plugins import specs as load_specs
from medbench.layout import DataDir

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
    sync_partitions(env)
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
    _assert_apart(records)


def _assert_apart(records) -> None:
    first, second = sorted(records, key=lambda r: r.start_time)
    assert first.end_time <= second.start_time, json.dumps(
        [(r.start_time, r.end_time) for r in (first, second)])


def test_the_uis_ranged_backfill_queues_what_needs_work_within_its_pool(demo_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(demo_data, data, ignore=shutil.ignore_patterns("dagster"))
    for pair in PAIRS:  # both need work again
        run = engine.resolve_evaluation(load_specs(), DataDir(data), *engine.split_partition_key(pair)).run_id
        (data / "artifacts" / run / "result.json").unlink()
    home = _home(tmp_path / "dagster-home")
    env = {**os.environ, "DAGSTER_HOME": str(home), "MEDBENCH_DATA": str(data), "PYTHONUNBUFFERED": "1"}
    sync_partitions(env)
    with DagsterUI(env, tmp_path / "logs") as ui:
        backfill_id = ui.launch_backfill(["vitaldb_ioh_predictions", "vitaldb_ioh_metrics"])  # all partitions
        status = ui.wait_backfill(backfill_id, timeout=600)
        log = ui.log_tail("daemon")
    assert status == "COMPLETED_SUCCESS", log
    records = [r for r in _runs(home) if r.dagster_run.tags.get("dagster/backfill") == backfill_id]
    ranged = [r for r in records if PARENT_TAG not in r.dagster_run.tags]
    children = [r for r in records if PARENT_TAG in r.dagster_run.tags]
    assert len(ranged) == 1 and "medbench/pool" not in ranged[0].dagster_run.tags  # it evaluates nothing itself
    assert sorted(r.dagster_run.tags["dagster/partition"] for r in children) == sorted(PAIRS)
    assert all(r.dagster_run.tags["medbench/pool"] == "cpu" for r in children)
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in records)
    _assert_apart(children)


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


def test_evaluate_all_submits_what_needs_work_to_the_queue(demo_data, tmp_path):
    """``evaluate_all`` launched like any job: with the daemon alive it queues each partition that
    needs work as its own run of ``evaluate_vitaldb_ioh`` (pool-tagged, held to the cpu limit of 1),
    ends, and the ``publish_on_new_results`` sensor publishes once they land."""
    data = tmp_path / "data"
    shutil.copytree(demo_data, data, ignore=shutil.ignore_patterns("dagster"))
    for pair in PAIRS:
        run = engine.resolve_evaluation(load_specs(), DataDir(data), *engine.split_partition_key(pair)).run_id
        (data / "artifacts" / run / "result.json").unlink()
    home = _home(tmp_path / "dagster-home")
    env = {**os.environ, "DAGSTER_HOME": str(home), "MEDBENCH_DATA": str(data), "PYTHONUNBUFFERED": "1"}
    sync_partitions(env)
    selection = {"tasks": ["vitaldb-ioh@0"], "models": [p.split("|")[1] for p in PAIRS]}
    log = open(tmp_path / "daemon.log", "w")
    daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"], cwd=REPO, env=env,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        launched = subprocess.run(
            [str(BIN / "dagster"), "job", "launch", "-w", "workspace.yaml", "-j", "evaluate_all", "--config-json",
             json.dumps({"ops": {"evaluate_selection": {"config": selection}}})],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert launched.returncode == 0, launched.stdout + launched.stderr
        records = _wait_for(home, daemon, tmp_path / "daemon.log", lambda rs: (
            sum(r.dagster_run.job_name == "evaluate_vitaldb_ioh" and r.dagster_run.is_finished for r in rs) == 2
            and any(r.dagster_run.job_name == "publish" and r.dagster_run.is_finished for r in rs)))
    finally:
        stop_group(daemon)
        log.close()
    parent = next(r.dagster_run for r in records if r.dagster_run.job_name == "evaluate_all")
    children = [r for r in records if r.dagster_run.job_name == "evaluate_vitaldb_ioh"]
    assert parent.status == dg.DagsterRunStatus.SUCCESS
    assert sorted(r.dagster_run.tags["dagster/partition"] for r in children) == sorted(PAIRS)
    assert all(r.dagster_run.tags["medbench/pool"] == "cpu" and r.dagster_run.tags[PARENT_TAG] == parent.run_id
               for r in children)
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in records), [
        (r.dagster_run.job_name, r.dagster_run.status) for r in records]
    _assert_apart(children)


def _wait_for(home: Path, daemon: subprocess.Popen, log: Path, done, timeout: float = 480) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            pytest.fail(f"dagster-daemon exited {daemon.returncode}:\n{log.read_text()[-4000:]}", pytrace=False)
        if done(records := _runs(home)):
            return records
        time.sleep(2)
    pytest.fail(f"not done in {timeout}s: {[(r.dagster_run.job_name, r.dagster_run.status) for r in _runs(home)]}\n"
                f"{log.read_text()[-4000:]}", pytrace=False)
