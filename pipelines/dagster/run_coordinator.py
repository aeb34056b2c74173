"""The queued run coordinator, plus the ``medbench/pool`` tag on every evaluation run it queues.

Why: the pool limits are ``tag_concurrency_limits`` on ``medbench/pool`` (``dagster.yaml``), and
Dagster's ``QueuedRunCoordinator`` can only apply a limit to a run that carries the tag. Runs the
CLI launches carry it; runs made by the UI ("Materialize", a job's partition), by asset or job
backfills, sensors or ``dagster job launch`` carry only ``dagster/partition``. Every submitted run
passes through the coordinator, in the webserver and in the daemon alike, so this is the one place
where all of them can be tagged before they are queued: the daemon then dequeues a GPU run only
while the ``gpu`` pool has a free slot, whichever path made it.

The pool comes from the partition key's model (``<task>@<version>|<model slug>``) and its backend
(``pipelines.backends.pools.pool_of``), read from that model's spec file alone. A run that already
has the tag, has no partition, or names no model spec is queued as it is (a bad key fails at once
when the run starts, with its reason). A backfill's ranged run has a partition range, not a
partition: it evaluates nothing itself, and the runs it queues for partitions that need work are
tagged with their pool already (``assets/ranged.py``); a range of one partition (a backfill of
partitions that are not contiguous) is that partition's run and is tagged as one.
"""

from __future__ import annotations

from dagster import DagsterRun, QueuedRunCoordinator, SubmitRunContext

from pipelines.dagster.limits import POOL_TAG
from pipelines.dagster.private_api import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARTITION_NAME_TAG,
)


def pool_for_partition(partition_key: str) -> str | None:
    """The pool a run of this evaluation partition takes a slot in, or None when no model spec
    matches the key (not an evaluation partition, or a key added by hand)."""
    from pipelines.orchestration.plugins import plugins
    from pipelines.dagster.engine_calls import SpecError, load_model_spec

    _, sep, slug = partition_key.partition("|")
    if not sep:
        return None
    try:
        model = load_model_spec(slug, None, plugins())
    except (SpecError, KeyError):
        return None  # an invalid spec: the run fails at start with the spec's own error
    return plugins().backends.get(model.backend).pool(model) if model is not None else None


class PoolTaggingRunCoordinator(QueuedRunCoordinator):
    """``QueuedRunCoordinator`` (same config, same daemon) that adds ``medbench/pool`` first."""

    def submit_run(self, context: SubmitRunContext) -> DagsterRun:
        run = context.dagster_run
        key = run.tags.get(PARTITION_NAME_TAG)
        start, end = run.tags.get(ASSET_PARTITION_RANGE_START_TAG), run.tags.get(ASSET_PARTITION_RANGE_END_TAG)
        if key is None and start is not None and start == end:
            key = start  # a backfill's range of one partition: that run evaluates it itself
        if key and POOL_TAG not in run.tags and (pool := pool_for_partition(key)):
            self._instance.add_run_tags(run.run_id, {POOL_TAG: pool})
            run = self._instance.get_run_by_id(run.run_id) or run
            context = SubmitRunContext(run, context.workspace)
        return super().submit_run(context)
