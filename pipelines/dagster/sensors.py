"""Keeps the evaluation partitions in step with the model specs, so that dropping a spec file in
``specs/models/`` is all it takes for its partitions to appear in the Dagster UI.

The sensor only reads the instance; it returns the additions and deletions as
``SensorResult(dynamic_partitions_requests=...)``, which the daemon applies and records in the
sensor's tick history (what changed, when), rather than mutating the instance itself.
"""


import dagster as dg

from pipelines.dagster.partitions import partition_requests
from pipelines.dagster.plugins import specs as load_specs


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
                       "materialisation), so they never stay STARTED and hold the queue.")
def dead_runs_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    """Unlike the partitions sensor this one writes to the instance (a run failure per dead run): only
    for runs tagged with this host, whose pid is no longer alive; runs elsewhere are left to run monitoring."""
    from pipelines.dagster.stale_runs import fail_dead_runs

    failed = fail_dead_runs(context.instance)
    return dg.SkipReason(f"reported failed: {', '.join(failed)}" if failed else "no dead runs on this host")
