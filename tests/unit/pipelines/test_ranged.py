"""The two decisions a backfill's ranged run takes before it starts work: whether queued runs would
be started (a queued coordinator and a live daemon; else the work runs inside the ranged run, so
nothing is left queued with nobody to dequeue it), and which tags a run it starts inherits (the
backfill's id and the launcher's own tags, never the range). End to end: tests/e2e/test_ranged_runs.py
(no daemon) and tests/e2e/test_ui_backfill.py (the daemon)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
from dagster._daemon.types import DaemonHeartbeat

from pipelines.dagster.child_runs import PARENT_TAG, child_tags, daemon_dequeues
from support.paths import REPO


def _instance(tmp_path: Path, yaml_source: Path) -> dg.DagsterInstance:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(yaml_source, home / "dagster.yaml")
    return dg.DagsterInstance.from_config(str(home))


def test_queued_runs_are_started_only_with_a_queued_coordinator_and_a_live_daemon(tmp_path):
    with _instance(tmp_path, REPO / "dagster.yaml") as instance:
        assert not daemon_dequeues(instance)  # no daemon has ever beaten
        instance.add_daemon_heartbeat(DaemonHeartbeat(time.time() - 3600, "QUEUED_RUN_COORDINATOR", "old", None))
        assert not daemon_dequeues(instance)  # an hour-old heartbeat: that daemon is gone
        instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), "QUEUED_RUN_COORDINATOR", "live", None))
        assert daemon_dequeues(instance)


def test_without_a_queued_coordinator_nothing_is_queued(tmp_path):
    config = tmp_path / "dagster.yaml"
    config.write_text("run_coordinator:\n  module: dagster.core.run_coordinator\n  class: DefaultRunCoordinator\n")
    with _instance(tmp_path, config) as instance:  # runs start at once: no queue for a daemon to drain
        instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), "QUEUED_RUN_COORDINATOR", "live", None))
        assert not daemon_dequeues(instance)


def test_a_started_run_inherits_the_backfill_and_user_tags_not_the_range():
    parent = SimpleNamespace(run_id="parent-1", tags={
        "dagster/backfill": "bf1", "dagster/asset_partition_range_start": "a|x",
        "dagster/asset_partition_range_end": "b|y", ".dagster/grpc_info": "{}", "team": "icu"})
    ev = SimpleNamespace(partition_key="vitaldb-ioh@0|medbench/neg-last-map")
    tags = child_tags(SimpleNamespace(run=parent), ev.partition_key, "cpu")
    assert tags == {"dagster/backfill": "bf1", "team": "icu", "dagster/partition": ev.partition_key,
                    "medbench/pool": "cpu", PARENT_TAG: "parent-1"}
