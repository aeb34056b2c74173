"""Keeps the evaluation partitions in step with the model specs, so that dropping a spec file in
``specs/models/`` is all it takes for its partitions to appear in the Dagster UI.

The sensor only reads the instance; it returns the additions and deletions as
``SensorResult(dynamic_partitions_requests=...)``, which the daemon applies and records in the
sensor's tick history (what changed, when), rather than mutating the instance itself.
"""


import dagster as dg

from pipelines.dagster.partitions import partition_requests
from pipelines.orchestration.plugins import specs as load_specs


@dg.sensor(minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Adds the partitions of new (task version, model) pairs in the specs and deletes "
                       "those of removed ones, per task family.")
def evaluation_partitions_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    requests = partition_requests(context.instance, load_specs())
    if not requests:
        return dg.SensorResult(skip_reason="partitions in sync with the specs")
    summary = "; ".join(f"{'add' if isinstance(r, dg.AddDynamicPartitionsRequest) else 'delete'} "
                        f"{r.partitions_def_name}: {', '.join(r.partition_keys)}" for r in requests)
    context.log.info(summary)
    return dg.SensorResult(dynamic_partitions_requests=requests)


@dg.sensor(minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Reports failed the runs launched on this host whose process is gone (a killed "
                       "materialization), so they never stay STARTED and hold the queue.")
def dead_runs_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    """Unlike the partitions sensor this one writes to the instance (a run failure per dead run): only
    for runs tagged with this host, whose pid is no longer alive; runs elsewhere are left to run monitoring."""
    from pipelines.dagster.stale_runs import fail_dead_runs

    failed = fail_dead_runs(context.instance)
    return dg.SkipReason(f"reported failed: {', '.join(failed)}" if failed else "no dead runs on this host")


def publish_sensor(publish_job, metrics_keys: list[dg.AssetKey], evaluation_jobs: list[str]) -> dg.SensorDefinition:
    """``publish_on_new_results``: requests a run of the named job ``publish`` when a metrics
    partition was materialized after the newest published warehouse, and no evaluation or publish
    is in progress.

    Why a sensor on the job, not an automation condition on the asset: Dagster launches what an
    asset's automation condition requests as its implicit asset job, so every automatic publish
    showed in the UI as ``__ASSET_JOB``; a sensor's run request runs the sensor's job. Missing or
    skipped partitions never block it: publishing reads finished result.json files only. The cursor
    (the newest metrics record handled) makes it request once per update, even if a publish fails."""

    @dg.sensor(name="publish_on_new_results", job=publish_job, minimum_interval_seconds=30,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Runs the publish job when a metrics partition was materialized after the newest "
                           "published warehouse (and no evaluation or publish is in progress).")
    def publish_on_new_results(context: dg.SensorEvaluationContext):
        instance = context.instance
        newest = max((_latest_storage_id(instance, k) for k in metrics_keys), default=0)
        published = _latest_storage_id(instance, dg.AssetKey("published_warehouse"))
        if newest <= max(_handled(context.cursor), published):
            return dg.SkipReason("no metrics partition materialized since the last publish")
        if busy := _in_progress(instance, set(metrics_keys), {*evaluation_jobs, publish_job.name}):
            return dg.SkipReason(f"waiting for run(s) in progress: {', '.join(busy)}")
        context.update_cursor(str(newest))
        return dg.RunRequest(run_key=f"metrics-{newest}")

    return publish_on_new_results


# Dagster's in-progress statuses (its IN_PROGRESS_RUN_STATUSES, not exported): a run in one holds a
# worker and may still write; a queued run has not started, so it waits its turn after the publish.
IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING,
               dg.DagsterRunStatus.SUSPENDED]


def _handled(cursor: str | None) -> int:
    """The newest metrics record handled; 0 for none, or for the cursor the automation-condition
    sensor of the same name left in an instance made before this one replaced it."""
    return int(cursor) if cursor and cursor.isdigit() else 0


def _latest_storage_id(instance: dg.DagsterInstance, key: dg.AssetKey) -> int:
    records = instance.fetch_materializations(key, limit=1).records
    return records[0].storage_id if records else 0


def _in_progress(instance: dg.DagsterInstance, metrics_keys: set, job_names: set[str]) -> list[str]:
    """Runs not finished that may still write a metrics partition or the warehouse (by job name, or
    by asset selection for the runs Dagster launches as its implicit asset job)."""
    runs = instance.get_runs(filters=dg.RunsFilter(statuses=IN_PROGRESS))
    return [f"{r.job_name} {r.run_id[:8]}" for r in runs
            if r.job_name in job_names or (r.asset_selection and (r.asset_selection & metrics_keys
                                                                  or dg.AssetKey("published_warehouse") in r.asset_selection))]
