"""Runs started from inside a run: a backfill's ranged run (``assets/ranged.py``) and ``evaluate_all``
(``evaluate_all.py``) start the partitions that need work as their own runs of ``evaluate_<family>``.

Why one path for both: with the queued coordinator and a live daemon (``dagster dev``, ``deploy/``)
each partition's run is *submitted to the instance*, as the UI's "Launch run" submits one, and
Dagster's own queue starts it within the run limits of ``dagster.yaml`` (``max_concurrent_runs``,
the ``medbench/pool`` tag limits): the launching run then ends. Without a daemon nobody would
dequeue a queued run, so the runs execute in the launching process instead, bounded by the same
limits (``launch.run_bounded``), and the launching run waits for them.
"""

from __future__ import annotations

import dagster as dg

from pipelines.dagster.limits import POOL_TAG, limits_of
from pipelines.dagster.private_api import (
    BACKFILL_ID_TAG,
    PARTITION_NAME_TAG,
    can_queue_from,
    queue_run,
    queued_runs_start,
)
from pipelines.orchestration.report import Outcome

PARENT_TAG = "medbench/ranged_run"  # on each run a run started: the starting run's id


def daemon_dequeues(instance: dg.DagsterInstance) -> bool:
    """True when a queued run would be started: the instance queues runs and its daemon is alive."""
    return queued_runs_start(instance)


def inherited_tags(context: dg.OpExecutionContext) -> dict[str, str]:
    """What a run started by ``context``'s run inherits: the parent's own tags (a backfill's id, the
    launcher's tags), not its range or system tags, and the parent's id."""
    parent = context.run
    tags = {k: v for k, v in parent.tags.items() if not k.startswith(("dagster/", "."))}
    if backfill := parent.tags.get(BACKFILL_ID_TAG):
        tags[BACKFILL_ID_TAG] = backfill
    return {**tags, PARENT_TAG: parent.run_id}


def child_tags(context: dg.OpExecutionContext, partition_key: str, pool: str) -> dict[str, str]:
    """The tags of a partition's run started by ``context``'s run: inherited, its partition and pool."""
    return {**inherited_tags(context), PARTITION_NAME_TAG: partition_key, POOL_TAG: pool}


def start_partition_runs(context: dg.OpExecutionContext, job: dg.JobDefinition, from_location: bool,
                         work: list, run_config: dict, max_runs: int | None = None) -> list[Outcome] | None:
    """``work`` (``plan.Planned``, status "run") as one run of ``job`` per partition, tagged with its
    pool and ``context``'s run as their parent. Returns None when they were queued (the daemon starts
    them), else their outcomes once they ran here. ``from_location``: ``job`` is the code location's
    own (only such a job can be queued: the daemon loads it from there). ``max_runs``: runs at once
    here, instead of ``max_concurrent_runs`` (queued runs follow the instance's limits)."""
    instance = context.instance
    if from_location and can_queue_from(context.run) and daemon_dequeues(instance):
        for p in work:
            run = queue_run(instance, context.run, job, run_config, child_tags(context, p.partition, p.pool))
            context.log.info(f"{p.partition}: queued run {run.run_id} ({job.name}, pool {p.pool})")
        return None
    return _run_here(context, job, work, run_config, max_runs)


def _run_here(context: dg.OpExecutionContext, job, work: list, run_config: dict,
              max_runs: int | None) -> list[Outcome]:
    from pipelines.dagster.launch import execute_partition, fail_in_flight, run_bounded
    from pipelines.orchestration.report import failure
    from pipelines.dagster.stale_runs import run_tags

    instance, data = context.instance, context.resources.medbench.data()
    limits = limits_of(instance)

    def launch(p, token: str) -> Outcome:
        # In this process: tagged with it too, so a later launcher fails the run if it is killed (stale_runs).
        result = execute_partition(job, p, token, instance, data.root, run_config=run_config,
                                   tags={**child_tags(context, p.partition, p.pool), **run_tags()})
        return Outcome(p.partition, "ran" if result.success else "failed", p.run_id,
                       "" if result.success else failure(result))

    def stopped(tokens: list[str]) -> None:
        fail_in_flight(instance, tokens, context.log.info, f"its launching run {context.run_id} was stopped")

    outcomes, interrupted = run_bounded(work, max_runs or limits.max_runs, limits, launch, log=context.log.info,
                                        on_interrupt=stopped,
                                        interrupts=(KeyboardInterrupt, dg.DagsterExecutionInterruptedError))
    if interrupted:
        raise dg.Failure(description="; ".join(f"{o.partition}: {o.detail}" for o in outcomes if o.status != "ran")
                         or "interrupted")
    return outcomes
