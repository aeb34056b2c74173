"""Keeps the evaluation partitions in step with the model specs, so that dropping a spec file in
``specs/models/`` is all it takes for its partitions to appear in the Dagster UI."""


import dagster as dg

from pipelines.dagster.partitions import sync_evaluation_partitions
from pipelines.engine.specs import load_specs


@dg.sensor(minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING)
def evaluation_partitions_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    added, removed = sync_evaluation_partitions(context.instance, load_specs())
    return dg.SkipReason(f"partitions in sync (added {added or 'none'}, removed {removed or 'none'})")
