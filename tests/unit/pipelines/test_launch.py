"""The one way a partition is launched in-process (``medbench materialize`` and a ranged run with no
daemon both use it): its run carries the partition, its pool and its launch token; a partition
another launch holds is waited for (then rule one decides again), and refused after the wait; on Ctrl-C only the unfinished runs of the in-flight tokens are
marked failed, with the reason given. The CLI's Ctrl-C end to end: tests/e2e/test_materialize_interrupt.py."""

from __future__ import annotations

import threading
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.storage.dagster_run import DagsterRunStatus

from pipelines.dagster.launch import (LAUNCH_TAG, WAIT_ENV, PartitionBusy, execute_partition, fail_in_flight,
                                      partition_lock, partition_wait_s)
from pipelines.dagster.limits import POOL_TAG
from pipelines.orchestration.plan import Planned

PARTS = dg.StaticPartitionsDefinition(["a", "b"])


@dg.asset(partitions_def=PARTS)
def thing(context) -> str:
    return context.partition_key


def _job():
    defs = dg.Definitions(assets=[thing], jobs=[dg.define_asset_job("evaluate_thing", selection=[thing])])
    return defs.resolve_job_def("evaluate_thing")


def _planned(partition: str) -> Planned:
    return Planned(partition, None, None, "run", run_id=f"run-{partition}", pool="api")


def test_a_launched_partition_is_its_own_tagged_run(tmp_path: Path) -> None:
    with dg.instance_for_test() as instance:
        result = execute_partition(_job(), _planned("b"), "tok-1", instance, tmp_path, run_config={},
                                   tags={"medbench/by": "test"})
        assert result.success
        run = instance.get_run_by_id(result.run_id)
        assert run.tags["dagster/partition"] == "b"
        assert run.tags[POOL_TAG] == "api" and run.tags[LAUNCH_TAG] == "tok-1" and run.tags["medbench/by"] == "test"


def test_a_partition_held_by_another_launch_is_refused_after_the_wait(tmp_path: Path) -> None:
    lines: list[str] = []
    with dg.instance_for_test() as instance, partition_lock(tmp_path / "locks", "a"):
        with pytest.raises(PartitionBusy, match=r"a is being evaluated by another process \(host .*pid .*still after 0.2 s"):
            execute_partition(_job(), _planned("a"), "tok-2", instance, tmp_path, run_config={}, tags={},
                              wait_s=0.2, log=lines.append)
        assert lines == [lines[0]] and lines[0].startswith("a: being evaluated by another process (host ")
        assert lines[0].endswith("waiting up to 0.2 s")
        assert execute_partition(_job(), _planned("b"), "tok-3", instance, tmp_path, run_config={}, tags={}).success


def test_a_launch_that_waited_applies_rule_one_again(tmp_path: Path) -> None:
    """Once the other holder is gone, ``reuse`` decides: what it returns is the outcome, and no run
    starts; when it returns None (the other process made nothing, e.g. it died), the run starts."""
    from pipelines.orchestration.report import Outcome

    seen = []

    def reuse(p, held):
        seen.append(held.waited)
        return Outcome(p.partition, "reused", p.run_id) if p.partition == "a" else None

    for partition in ("a", "b"):
        entered, release = threading.Event(), threading.Event()

        def hold(key=partition) -> None:
            with partition_lock(tmp_path / "locks", key):
                entered.set()
                release.wait(30)

        holder = threading.Thread(target=hold)
        holder.start()
        assert entered.wait(30)
        with dg.instance_for_test() as instance:  # the holder lets go once this launch says it waits
            result = execute_partition(_job(), _planned(partition), "tok-6", instance, tmp_path, run_config={},
                                       tags={}, reuse=reuse, wait_s=30, log=lambda _: release.set())
            if partition == "a":
                assert result == Outcome("a", "reused", "run-a") and not instance.get_runs()
            else:
                assert result.success and len(instance.get_runs()) == 1
        holder.join()
    assert seen == [True, True]


def test_the_wait_comes_from_the_environment_unless_given(monkeypatch) -> None:
    monkeypatch.delenv(WAIT_ENV, raising=False)
    assert partition_wait_s() == 600
    monkeypatch.setenv(WAIT_ENV, "5")
    assert partition_wait_s() == 5 and partition_wait_s(2) == 2
    monkeypatch.setenv(WAIT_ENV, "soon")
    with pytest.raises(PartitionBusy, match=f"{WAIT_ENV}='soon' is not a number of seconds"):
        partition_wait_s()


def test_ctrl_c_fails_only_the_unfinished_runs_of_the_tokens_in_flight(tmp_path: Path) -> None:
    job = _job()
    with dg.instance_for_test() as instance:
        finished = execute_partition(job, _planned("a"), "tok-4", instance, tmp_path, run_config={}, tags={}).run_id
        stuck = instance.create_run_for_job(job_def=job, tags={LAUNCH_TAG: "tok-4"}, status=DagsterRunStatus.STARTED)
        other = instance.create_run_for_job(job_def=job, tags={LAUNCH_TAG: "tok-5"}, status=DagsterRunStatus.STARTED)
        lines: list[str] = []
        fail_in_flight(instance, ["tok-4"], lines.append, why="its ranged run r1 was stopped")
        assert instance.get_run_by_id(stuck.run_id).status == DagsterRunStatus.FAILURE
        assert instance.get_run_by_id(finished).status == DagsterRunStatus.SUCCESS
        assert instance.get_run_by_id(other.run_id).status == DagsterRunStatus.STARTED
        assert lines == [f"marked run {stuck.run_id} () failed: interrupted"]
        failure = instance.all_logs(stuck.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)[-1]
        assert "interrupted: its ranged run r1 was stopped" in failure.message
