"""``evaluate_all``: a selection's evaluations in one job, so a maintainer in the UI gets rule one before launching.

Why: a backfill runs rule one too (one ranged run, ``assets/ranged.py``) but selects partitions,
not tasks and models, and leaves the inputs and the publish to their own assets. This job takes
``medbench materialize``'s selection flags and, in one run: materializes the inputs when they are
not current (``materialize_inputs``, in this process: the decisions need them), decides every
selected partition by rule one (reuses recorded as observations, skips as materializations marked
skipped, no run each), then *submits* the partitions that need work to the instance as runs of
``evaluate_<family>`` (``submit.py``: the path of a UI backfill's ranged run). With a live daemon
they are queued and Dagster's run queue starts them within the pool limits of ``dagster.yaml``;
``publish_on_new_results`` publishes once they land. Without one they run here, bounded by the
same limits, and this run publishes. It never calls the CLI's orchestrator. The op's log holds the
decisions; its output metadata counts them. Config (Launchpad): ``tasks``, ``models``, ``force``,
``jobs``.
"""

import dagster as dg
from pydantic import Field

from pipelines.dagster.resources import MedbenchResource

DECIDED_BY = "evaluate_all (rule one)"


class EvaluateAllConfig(dg.Config):
    """What ``medbench materialize`` takes as flags; empty lists select every pair of the specs."""

    tasks: list[str] = Field(default_factory=list, description="task slugs or slug@version (default: all)")
    models: list[str] = Field(default_factory=list, description="model slugs or provider ids (default: all)")
    force: bool = Field(default=False, description="re-score the selected partitions' stored outputs")
    jobs: int = Field(default=0, description="evaluation runs at once when they run here, without a daemon "
                                             "(0: max_concurrent_runs of dagster.yaml)")


def _job(context, jobs_by_name: dict, name: str) -> tuple:
    """The code location's job ``name`` (it can be queued), else the one built over these specs."""
    from pipelines.dagster.private_api import repository_job

    job = repository_job(context, name)
    return (job, True) if job is not None else (jobs_by_name[name], False)


def _materialize_inputs(context, instance, specs, data, families, jobs_by_name) -> None:
    from pipelines.dagster import inputs_state

    if inputs_state.current(instance, specs, data, families):
        context.log.info("inputs current (snapshots and instances match the specs): not rematerialized")
        return
    selection = list(dict.fromkeys([*(f.snapshot for f in families), *(f.instances for f in families)]))
    context.log.info(f"materializing inputs: {', '.join(selection)}")
    from pipelines.dagster.stale_runs import run_tags
    from pipelines.dagster.child_runs import inherited_tags

    tags = {**inherited_tags(context), **run_tags()}
    result = _job(context, jobs_by_name, "materialize_inputs")[0].execute_in_process(
        instance=instance, raise_on_error=False, tags=tags,
        asset_selection=[dg.AssetKey.from_user_string(a) for a in selection])
    if not result.success:
        from pipelines.orchestration.report import failure

        raise dg.Failure(description=f"inputs failed: {failure(result)}")


def _start(context, built, jobs_by_name: dict, to_run: list, config: EvaluateAllConfig) -> tuple[list, int]:
    """The runs of the partitions that need work, per family: (outcomes of those run here, count queued)."""
    from pipelines.dagster.partitions import evaluation_job_name
    from pipelines.dagster.child_runs import start_partition_runs

    outcomes, queued = [], 0
    for family in dict.fromkeys(p.task.family for p in to_run):
        fa = built.families[family]
        job, from_location = _job(context, jobs_by_name, evaluation_job_name(family))
        op = {"config": {"force": config.force}}
        work = [p for p in to_run if p.task.family == family]
        ran = start_partition_runs(context, job, from_location, work, {"ops": {fa.predictions: op, fa.metrics: op}},
                                   max_runs=config.jobs or None)
        if ran is None:
            queued += len(work)
        else:
            outcomes += ran
    return outcomes, queued


@dg.op(description="Rule one for every selected evaluation partition, then only the partitions that need work "
                   "submitted as their own evaluate_<family> runs, then the publish.")
def evaluate_selection(context: dg.OpExecutionContext, config: EvaluateAllConfig, medbench: MedbenchResource):
    from pipelines.dagster.building import build, resolved_jobs
    from pipelines.dagster.partitions import sync_evaluation_partitions
    from pipelines.orchestration.plan import MaterializeError, plan_selection, select
    from pipelines.dagster.rule_one import publish_needed, record_reuses
    from pipelines.dagster.skip_records import record_skips
    from pipelines.dagster.stale_runs import run_tags
    from pipelines.dagster.child_runs import inherited_tags
    from warehouse.repair import servable_current

    data, specs, instance = medbench.data(), medbench.specs(), context.instance
    try:
        pairs = select(specs, config.tasks, config.models)
    except MaterializeError as exc:
        raise dg.Failure(description=str(exc)) from None
    built = build(specs)
    jobs_by_name = resolved_jobs(built, {"medbench": medbench})
    sync_evaluation_partitions(instance, specs)
    families = [built.families[f] for f in dict.fromkeys(t.family for t, _ in pairs)]
    _materialize_inputs(context, instance, specs, data, families, jobs_by_name)
    planned = plan_selection(specs, data, pairs, config.force)
    reused = record_reuses(instance, built, data, [p for p in planned if p.status == "reuse"], DECIDED_BY)
    skipped = [p for p in planned if p.status == "skip"]
    for p in skipped:
        context.log.info(f"skipping {p.partition}: {p.reason}")
    record_skips(instance, built, specs, skipped)
    to_run = [p for p in planned if p.status == "run"]
    context.log.info(f"{len(reused)} reused, {len(skipped)} skipped, {len(to_run)} to run")
    outcomes, queued = _start(context, built, jobs_by_name, to_run, config)
    failed = [f"{o.partition}: {o.detail}" for o in outcomes if o.status != "ran"]
    if failed:
        raise dg.Failure(description="; ".join(failed))
    if queued:
        context.log.info(f"{queued} run(s) queued; publish_on_new_results publishes once they land")
    elif outcomes or publish_needed(data):
        result = jobs_by_name["publish"].execute_in_process(instance=instance, raise_on_error=False,
                                                             tags={**inherited_tags(context), **run_tags()})
        if not result.success:
            from pipelines.orchestration.report import failure

            raise dg.Failure(description=f"publish failed: {failure(result)}")
    version, cause = servable_current(data)
    if cause and not queued:
        raise dg.Failure(description=f"the published warehouse is unusable: {cause}; run evaluate_all again")
    counts = {"ran": len(outcomes), "queued": queued, "reused": len(reused), "skipped": len(skipped)}
    return dg.Output(None, metadata={**counts, "published_version": version or "(unchanged)"})


@dg.job(name="evaluate_all", executor_def=dg.in_process_executor,
        description="Every selected evaluation: rule one first (reused partitions cost milliseconds, no run "
                    "each), skips with reasons, runs submitted only for what needs work (queued to the daemon, "
                    "else run here), then the publish. Config: tasks, models, force, jobs.")
def evaluate_all_job():
    evaluate_selection()
