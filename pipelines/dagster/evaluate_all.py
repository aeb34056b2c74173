"""``evaluate_all``: the CLI's path as one job, so a maintainer in the UI gets rule one before launching.

Why: a backfill runs rule one too (one ranged run, ``assets/ranged.py``) but selects partitions,
not the CLI's tasks and models, and leaves the inputs and the publish to their own assets. This job
does in one run what ``medbench materialize`` does, with its flags: inputs when not
current, rule one for every selected partition (reuses recorded without a run), skips with their
reason, the partitions that need work as their own runs of ``evaluate_<family>`` (tagged, within
the pool limits of the instance's dagster.yaml, visible in the UI), then the publish. The op's
log holds the report; its output metadata counts the outcomes. Config (Launchpad) takes the CLI's
selection flags: ``tasks``, ``models``, ``force``, ``jobs``.
"""


import dagster as dg
from pydantic import Field

from pipelines.dagster.resources import MedbenchResource


class EvaluateAllConfig(dg.Config):
    """What ``medbench materialize`` takes as flags; empty lists select every pair of the specs."""

    tasks: list[str] = Field(default_factory=list, description="task slugs or slug@version (default: all)")
    models: list[str] = Field(default_factory=list, description="model slugs or provider ids (default: all)")
    force: bool = Field(default=False, description="re-score the selected partitions' stored outputs")
    jobs: int = Field(default=0, description="evaluation runs at once (0: max_concurrent_runs of dagster.yaml)")


def _failure_text(report) -> str:
    failed = [f"{o.partition}: {o.detail}" for o in report.outcomes if o.status in ("failed", "interrupted")]
    return "; ".join([*report.errors, *failed]) or "stopped"


@dg.op(description="Rule one for every selected evaluation partition, then only the partitions that need work as "
                   "their own evaluate_<family> runs, then the publish (what `medbench materialize` does).")
def evaluate_selection(context: dg.OpExecutionContext, config: EvaluateAllConfig, medbench: MedbenchResource):
    from pipelines.dagster.orchestrate import MaterializeError, materialize_selection

    data = medbench.data()
    try:
        report = materialize_selection(
            demo=data.kind() == "demo", tasks=config.tasks, models=config.models, force=config.force, data=data,
            jobs=config.jobs or None, dagster_home=context.instance.root_directory,
            interrupts=(KeyboardInterrupt, dg.DagsterExecutionInterruptedError))
    except MaterializeError as exc:
        raise dg.Failure(description=str(exc)) from None
    for line in report.render().splitlines():
        context.log.info(line)
    if not report.ok:
        raise dg.Failure(description=_failure_text(report))
    counts = {status: sum(o.status == status for o in report.outcomes) for status in ("ran", "reused", "skipped")}
    return dg.Output(None, metadata={**counts, "published_version": report.version or "(unchanged)"})


@dg.job(name="evaluate_all", executor_def=dg.in_process_executor,
        description="Every selected evaluation at the CLI's cost: rule one first (reused partitions cost "
                    "milliseconds, no run each), skips with reasons, separate runs only for what needs work, "
                    "then the publish. Config: tasks, models, force, jobs.")
def evaluate_all_job():
    evaluate_selection()
