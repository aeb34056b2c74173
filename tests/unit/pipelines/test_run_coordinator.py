"""The run coordinator of dagster.yaml tags what it queues with the run's pool, from the partition's
model spec, so the queued coordinator's pool limits apply to UI, backfill and sensor runs too (the
daemon end to end is tests/e2e/test_daemon_pools.py)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.remote_origin import GrpcServerCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin
from dagster._core.run_coordinator import SubmitRunContext

from pipelines.dagster.limits import POOL_TAG
from pipelines.dagster.run_coordinator import PoolTaggingRunCoordinator, pool_for_partition
from support.model_specs import specs_with_served
from support.paths import REPO


@pytest.fixture
def instance(tmp_path: Path):
    """An instance configured by the checkout's dagster.yaml, as `medbench` and `dagster dev` use it."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(REPO / "dagster.yaml", home / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(home)) as inst:
        yield inst


# Where a queued run's job lives (the daemon launches it from there); nothing listens: no run starts here.
ORIGIN = RemoteJobOrigin(RemoteRepositoryOrigin(GrpcServerCodeLocationOrigin("127.0.0.1", 9, location_name="medbench"),
                                                "__repository__"), "evaluate_vitaldb_ioh")


def _submit(instance: dg.DagsterInstance, tags: dict[str, str]) -> dg.DagsterRun:
    run = dg.DagsterRun(job_name="evaluate_vitaldb_ioh", run_id=str(uuid.uuid4()),
                        status=dg.DagsterRunStatus.NOT_STARTED, tags=tags, remote_job_origin=ORIGIN)
    instance.add_run(run)
    return instance.run_coordinator.submit_run(SubmitRunContext(run, workspace=None))


def test_the_checkouts_instance_uses_the_pool_tagging_coordinator(instance) -> None:
    assert isinstance(instance.run_coordinator, PoolTaggingRunCoordinator)


def test_a_partition_run_is_queued_with_its_models_pool(instance) -> None:
    run = _submit(instance, {"dagster/partition": "vitaldb-ioh@0|medbench/neg-last-map"})
    assert run.status == dg.DagsterRunStatus.QUEUED
    assert run.tags[POOL_TAG] == "cpu"
    stored = instance.get_run_by_id(run.run_id)  # what the daemon's dequeuer reads
    assert stored.tags[POOL_TAG] == "cpu" and stored.status == dg.DagsterRunStatus.QUEUED
    vllm = _submit(instance, {"dagster/partition": "clinicalqa@0|google/medgemma-27b-text-it"})
    assert vllm.tags[POOL_TAG] == "gpu"


def test_a_tagged_run_keeps_its_tag_and_others_are_queued_untouched(instance) -> None:
    cli = _submit(instance, {"dagster/partition": "vitaldb-ioh@0|medbench/neg-last-map", POOL_TAG: "api"})
    assert cli.tags[POOL_TAG] == "api"
    for tags in ({}, {"dagster/partition": "no-bar-here"}, {"dagster/partition": "vitaldb-ioh@0|acme/nobody"},
                 {"dagster/partition": "vitaldb-ioh@0|../../etc/passwd"}):
        run = _submit(instance, tags)
        assert run.status == dg.DagsterRunStatus.QUEUED and POOL_TAG not in run.tags, tags


def test_an_api_model_takes_the_api_pool(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEDBENCH_SPECS", str(specs_with_served(tmp_path / "specs", "http://127.0.0.1:9/v1")))
    assert pool_for_partition("clinicalqa@0|acme/served") == "api"
    assert pool_for_partition("clinicalqa@0|medbench/random") == "cpu"


def test_a_backfill_range_of_one_partition_takes_its_pool_and_a_wider_range_none(instance) -> None:
    start, end = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
    one = _submit(instance, {start: "vitaldb-ioh@0|medbench/neg-last-map", end: "vitaldb-ioh@0|medbench/neg-last-map"})
    assert one.tags[POOL_TAG] == "cpu"  # that run evaluates its partition itself
    wide = _submit(instance, {start: "vitaldb-ioh@0|medbench/hgb-window", end: "vitaldb-ioh@0|medbench/neg-last-map"})
    assert POOL_TAG not in wide.tags  # a ranged run queues its work as runs tagged with their own pools


def test_the_community_modal_is_off_by_its_own_setting(instance) -> None:
    """Issue #40: Dagster's "Join the community" modal covered `medbench ui` on a first visit; the
    instance setting ``nux: enabled: false`` turns it off (here and in the deploy/ instances)."""
    import yaml

    assert instance.nux_enabled is False
    for config in (REPO / "deploy" / "dagster.yaml", REPO / "deploy" / "k8s" / "dagster.yaml"):
        assert yaml.safe_load(config.read_text())["nux"] == {"enabled": False}, config
