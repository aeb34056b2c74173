"""``pipelines/dagster/private_api.py`` is medbench's only use of Dagster's private modules; each test
here fails when Dagster's behaviour under one of its functions changes (a renamed tag, an override
ignored, a batch not stored as the public call stores it), before a user's run does."""

import shutil
import time

import dagster as dg
import pytest

from pipelines.dagster import private_api as api
from pipelines.dagster.sensors import IN_PROGRESS
from support.paths import REPO


def test_the_tags_medbench_writes_are_the_ones_dagster_reads():
    # Persisted in every instance: a rename would orphan the records of every earlier run.
    key = dg.AssetKey("vitaldb_ioh_predictions")
    assert (api.DATA_VERSION_TAG, api.CODE_VERSION_TAG, api.DATA_VERSION_IS_USER_PROVIDED_TAG) == (
        "dagster/data_version", "dagster/code_version", "dagster/data_version_is_user_provided")
    assert api.input_data_version_tag(key) == "dagster/input_data_version/vitaldb_ioh_predictions"
    assert api.input_event_pointer_tag(key) == "dagster/input_event_pointer/vitaldb_ioh_predictions"
    assert (api.PARTITION_NAME_TAG, api.BACKFILL_ID_TAG) == ("dagster/partition", "dagster/backfill")
    assert (api.ASSET_PARTITION_RANGE_START_TAG, api.ASSET_PARTITION_RANGE_END_TAG) == (
        "dagster/asset_partition_range_start", "dagster/asset_partition_range_end")


def test_the_in_progress_statuses_are_dagsters():
    from dagster._core.storage.dagster_run import IN_PROGRESS_RUN_STATUSES

    assert set(IN_PROGRESS) == set(IN_PROGRESS_RUN_STATUSES)


def test_the_override_turns_compute_log_capture_off(tmp_path):
    shutil.copyfile(REPO / "dagster.yaml", tmp_path / "dagster.yaml")
    with api.instance_from_dir(tmp_path, api.NO_CAPTURE) as instance:
        assert type(instance.compute_log_manager).__name__ == "NoOpComputeLogManager"
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert type(instance.compute_log_manager).__name__ != "NoOpComputeLogManager"


def test_a_batch_of_observations_is_stored_as_the_public_call_stores_one():
    key = dg.AssetKey("vitaldb_ioh_metrics")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("p", ["a", "b", "c"])
        instance.report_runless_asset_event(dg.AssetObservation(asset_key=key, partition="a", tags={"t": "1"}))
        api.store_observations(instance, [dg.AssetObservation(asset_key=key, partition=p, tags={"t": "2"})
                                          for p in ("b", "c")])
        records = instance.fetch_observations(key, limit=10).records
        assert sorted(r.partition_key for r in records) == ["a", "b", "c"]
        assert {r.run_id for r in records} == {records[-1].run_id}  # all runless, like the public one's
        assert {r.event_log_entry.job_name for r in records} == {records[-1].event_log_entry.job_name}


def test_a_check_verdict_points_at_its_target_materialization():
    target = api.check_target(7, "run-1", 1.5)
    evaluation = dg.AssetCheckEvaluation(asset_key=dg.AssetKey("a"), check_name="c", passed=True,
                                         target_materialization_data=target)
    assert (evaluation.target_materialization_data.storage_id, evaluation.target_materialization_data.run_id) == (
        7, "run-1")


def test_a_run_not_launched_from_a_code_location_has_no_repository_job():
    seen = {}

    @dg.asset
    def probe(context: dg.AssetExecutionContext) -> None:
        job = api.repository_job(context, "probe_job")
        seen["job"] = job.name if job else None

    with dg.instance_for_test() as instance:
        assert dg.materialize([probe], instance=instance).success
        assert seen["job"] is None
        defs = dg.Definitions(assets=[probe], jobs=[dg.define_asset_job("probe_job", selection=[probe])])
        assert defs.resolve_job_def("probe_job").execute_in_process(instance=instance).success
        assert seen["job"] is None  # in-process execution has no code location either: the caller builds the job


def test_queued_runs_start_only_with_a_live_daemon(tmp_path):
    from dagster._daemon.types import DaemonHeartbeat

    shutil.copyfile(REPO / "dagster.yaml", tmp_path / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert not api.queued_runs_start(instance)
        instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), "QUEUED_RUN_COORDINATOR", "live", None))
        assert api.queued_runs_start(instance)
    assert not api.can_queue_from(dg.DagsterRun(job_name="j", run_id="r"))  # not launched from a code location


@pytest.mark.parametrize("config, enabled", [({"enabled": {}}, True), ({"disabled": {}}, False)])
def test_the_celery_retry_mode_is_read_from_config(config, enabled):
    assert api.retry_mode(config).enabled is enabled
