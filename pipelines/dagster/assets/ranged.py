"""Ranged runs: a backfill's one run over many evaluation partitions, rule one first.

Why: the evaluation assets have a single-run backfill policy, so a backfill from the UI ("Launch
backfill", "Materialize all", a job's partitions) is one run for a family's partitions, not one
run (one process loading the code location, seconds) per partition. In that run the predictions
step decides every partition as ``medbench materialize`` does, without a run each:

* **reused** (its result.json exists, no ``force``): a materialisation of predictions and of
  metrics for the partition, with the same metadata, data version (the run id) and code version as
  a run of that partition alone would record, and the inputs they were made from;
* **skipped** (its model cannot run here): a materialisation marked skipped, with the reason;
* **needs work**: its own run of ``evaluate_<family>`` (tagged, with its checks), in the same
  backfill. With the queued coordinator and a live daemon (``dagster dev``, ``deploy/``) the runs
  are queued and the daemon starts them within the pool limits, while this run ends; otherwise
  they run here, bounded by the same limits (``launch.py``), and this run waits for them.

Every partition of the range then has a materialisation from a run of the backfill, so the
backfill ends green. The step yields no output: the metrics step and the check steps of this run
are skipped, and their records are made here: the materialisations, and each check's verdict on
every reused partition (evaluated from the stored files, as the check itself does) and skipped pair
(a warning saying skipped, and why); a new evaluation's checks run in its own run.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from dagster._core.storage.tags import BACKFILL_ID_TAG, PARTITION_NAME_TAG

from pipelines.dagster import engine_calls as engine
from pipelines.dagster.limits import POOL_TAG, Limits, read_limits
from pipelines.dagster.partitions import evaluation_job_name, metrics_asset_name, predictions_asset_name

from .checks import evaluation
from .evaluation_records import (
    SKIPPED_PREFIX,
    input_tags,
    invalid_key_reason,
    metrics_metadata,
    predictions_metadata,
    record_tags,
    skipped_metadata,
    skipped_outcome,
)
from .metadata import typed

PARENT_TAG = "medbench/ranged_run"  # on each run a ranged run started: the ranged run's id


def evaluate_range(context: dg.AssetExecutionContext, medbench, config, family, family_hash: str,
                   instances_key: dg.AssetKey, verdicts: dict):
    """Rule one for every partition of the run's range, then the work (see the module docstring);
    yields the materialisations (yielded, not logged, so each is stored before the next asset's
    records read their input pointers) and the check evaluations on them. ``verdicts``: asset key
    -> (partition key, medbench) -> that asset's check outcomes, the functions its checks call."""
    specs, data = medbench.specs(), medbench.data()
    keys = list(context.partition_keys)
    bad = [reason for key in keys if (reason := invalid_key_reason(key, specs))]
    if bad:
        raise dg.Failure(description="; ".join(bad), allow_retries=False)
    pred_key, metrics_key = dg.AssetKey(predictions_asset_name(family)), dg.AssetKey(metrics_asset_name(family))
    # The assets this run materialises (a backfill may select one of the two).
    selected = set(context.job_def.asset_layer.selected_asset_keys)
    if context.run.asset_selection:
        selected &= set(context.run.asset_selection)
    keys_recorded = [k for k in (pred_key, metrics_key) if k in selected]
    reused, skipped, work = [], [], []
    for key in keys:
        ev = engine.plan(specs, data, *engine.split_partition_key(key))
        record = None if config.recompute else engine.existing_result(data, ev.run_id)
        if record is not None:
            reused.append((ev, record))
        elif reason := ev.backend.not_runnable_reason(ev.model, data):
            skipped.append((ev, reason))
        else:
            work.append(ev)
    context.log.info(f"{len(keys)} partitions: {len(reused)} reused, {len(skipped)} skipped (cannot run here), "
                     f"{len(work)} need work")
    recorder = _Recorder(context, family, family_hash, instances_key, verdicts)
    for asset_key in keys_recorded:
        yield from recorder.record(asset_key, reused, skipped, data)
        yield from recorder.checks(asset_key, reused, skipped, medbench)
    if work:
        _start_work(context, work, config, family)


class _Recorder:
    """Materialisations recorded by the ranged run, tagged as Dagster tags a step's own output, and
    the verdicts of this run's checks on those partitions.

    Why the verdicts here: the run's check steps are planned for every partition of the range but
    never execute (the step yields no output), and Dagster shows a planned check that never ran as
    "Skipped" on every partition, hiding the last verdicts. So each check of a reused partition is
    evaluated here from the stored files (what the check step itself reads), and a skipped pair's
    checks say skipped and why; a partition that needs work gets its verdicts from its own run."""

    def __init__(self, context: dg.AssetExecutionContext, family, family_hash: str, instances_key: dg.AssetKey,
                 verdicts: dict):
        self.context, self.family_hash, self.verdicts = context, family_hash, verdicts
        self.predictions = dg.AssetKey(predictions_asset_name(family))
        # asset -> (its upstream, whether the upstream is partitioned like it)
        self.upstream = {self.predictions: (instances_key, False),
                         dg.AssetKey(metrics_asset_name(family)): (self.predictions, True)}

    def record(self, asset_key: dg.AssetKey, reused: list, skipped: list, data):
        is_predictions = asset_key == self.predictions
        upstream, partitioned = self.upstream[asset_key]
        inputs = input_tags(self.context.instance, upstream, partitioned, [ev.partition_key for ev, _ in reused + skipped])
        for ev, record in reused:
            meta = (predictions_metadata(data, ev.run_id, ev.snapshot_id, True) if is_predictions
                    else metrics_metadata(data, record, True))
            yield self._event(asset_key, ev.partition_key, ev.run_id, meta, inputs)
        for ev, reason in skipped:
            meta = skipped_metadata(ev.partition_key, ev.model.slug, ev.run_id, reason)
            if is_predictions:
                self.context.log.warning(meta["skipped_reason"])
            yield self._event(asset_key, ev.partition_key, SKIPPED_PREFIX + ev.run_id, meta, inputs)

    def _event(self, asset_key, partition: str, version: str, meta: dict, inputs: dict) -> dg.AssetMaterialization:
        tags = record_tags(version, self.family_hash, inputs.get(partition, {}))
        if backfill := self.context.run.tags.get(BACKFILL_ID_TAG):
            tags[BACKFILL_ID_TAG] = backfill
        return dg.AssetMaterialization(asset_key=asset_key, partition=partition, metadata=typed(meta), tags=tags)

    def _check_keys(self, asset_key: dg.AssetKey) -> list[dg.AssetCheckKey]:
        """The checks on ``asset_key`` this run planned (a backfill may select some or none)."""
        selection = self.context.run.asset_check_selection
        if selection is None:
            selection = self.context.job_def.asset_layer.asset_graph.get_check_keys_for_assets({asset_key})
        return sorted((k for k in selection if k.asset_key == asset_key), key=lambda k: k.name)

    def checks(self, asset_key: dg.AssetKey, reused: list, skipped: list, medbench):
        """One evaluation per planned check and recorded partition, pointing at the materialisation
        just recorded (yielded after it, so it is stored)."""
        check_keys = self._check_keys(asset_key)
        if not check_keys or not (reused or skipped):
            return
        partitions = [ev.partition_key for ev, _ in reused + skipped]
        targets = _materialisations(self.context.instance, asset_key, partitions, self.context.run.run_id)
        reasons = {ev.partition_key: (ev, reason) for ev, reason in skipped}
        for partition in partitions:
            if partition in reasons:
                ev, reason = reasons[partition]
                outcomes = {k.name: skipped_outcome(k.name, partition, ev.model.slug, ev.run_id, reason)
                            for k in check_keys}
            else:
                outcomes = {o.name: o for o in self.verdicts[asset_key](partition, medbench)}
            for key in check_keys:
                yield evaluation(key, outcomes.get(key.name), partition, targets.get(partition))


def _materialisations(instance, asset_key: dg.AssetKey, partitions: list[str], run_id: str) -> dict:
    """partition -> the target data (storage id, run, time) of its materialisation by ``run_id``."""
    from dagster._core.definitions.asset_checks.asset_check_evaluation import (
        AssetCheckEvaluationTargetMaterializationData,
    )

    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=partitions), limit=len(partitions) * 2).records
    out = {}
    for rec in records:  # newest first
        if rec.run_id == run_id and rec.partition_key not in out:
            out[rec.partition_key] = AssetCheckEvaluationTargetMaterializationData(
                storage_id=rec.storage_id, run_id=rec.run_id, timestamp=rec.timestamp)
    return out


def _child_tags(context: dg.AssetExecutionContext, ev, pool: str) -> dict[str, str]:
    """The parent's own tags (a backfill's id, the launcher's tags), not its range or system tags."""
    parent = context.run
    tags = {k: v for k, v in parent.tags.items() if not k.startswith(("dagster/", "."))}
    if backfill := parent.tags.get(BACKFILL_ID_TAG):
        tags[BACKFILL_ID_TAG] = backfill
    return {**tags, PARTITION_NAME_TAG: ev.partition_key, POOL_TAG: pool, PARENT_TAG: parent.run_id}


def _run_config(family, config) -> dict:
    op = {"config": {"force": config.force, "regenerate": config.regenerate}}
    return {"ops": {predictions_asset_name(family): op, metrics_asset_name(family): op}}


def daemon_dequeues(instance: dg.DagsterInstance) -> bool:
    """True when a queued run would be started: the instance queues runs and its daemon is alive."""
    from dagster._core.run_coordinator import QueuedRunCoordinator
    from dagster._daemon.controller import get_daemon_statuses

    if not isinstance(instance.run_coordinator, QueuedRunCoordinator):
        return False
    status = get_daemon_statuses(instance, ["QUEUED_RUN_COORDINATOR"], ignore_errors=True)
    return bool(status["QUEUED_RUN_COORDINATOR"].healthy)


def _repository_job(context: dg.AssetExecutionContext, name: str):
    """``name`` from the code location this run was loaded from, or None (e.g. ``dg.materialize``)."""
    from dagster._check import CheckError

    try:
        repo = context.repository_def
    except CheckError:  # Dagster's invariant: no repository on this run's context
        return None
    return repo.get_job(name) if repo.has_job(name) else None


def _start_work(context: dg.AssetExecutionContext, work: list, config, family) -> None:
    parent, name = context.run, evaluation_job_name(family.name)
    job = _repository_job(context, name)
    if (job is not None and parent.remote_job_origin is not None and parent.job_code_origin is not None
            and daemon_dequeues(context.instance)):
        _queue(context, job, work, config, family)
    else:
        _run_here(context, job or _evaluation_job(context, family), work, config, family)


def _queue(context: dg.AssetExecutionContext, job, work: list, config, family) -> None:
    """One queued run of ``evaluate_<family>`` per partition, in this code location; the daemon
    starts each within its pool's limit (the coordinator's own dequeue, as for any queued run)."""
    from dagster._core.remote_origin import RemoteJobOrigin
    from dagster._core.storage.dagster_run import DagsterRunStatus

    parent, instance = context.run, context.instance
    origin = RemoteJobOrigin(repository_origin=parent.remote_job_origin.repository_origin, job_name=job.name)
    code_origin = parent.job_code_origin._replace(job_name=job.name)
    for ev in work:
        run = instance.create_run_for_job(
            job_def=job, run_config=_run_config(family, config), tags=_child_tags(context, ev, ev.backend.pool(ev.model)),
            status=DagsterRunStatus.NOT_STARTED, remote_job_origin=origin, job_code_origin=code_origin)
        instance.submit_run(run.run_id, workspace=None)
        context.log.info(f"{ev.partition_key}: queued run {run.run_id} ({job.name}, pool {ev.backend.pool(ev.model)})")


def _evaluation_job(context: dg.AssetExecutionContext, family):
    """``evaluate_<family>`` built from this run's own assets, for a run not made from the code
    location (``dg.materialize``, e.g. in a test), which has no named jobs to take it from."""
    name = evaluation_job_name(family.name)
    graph_defs = context.job_def.asset_layer.asset_graph.assets_defs
    checks = [d for d in graph_defs if isinstance(d, dg.AssetChecksDefinition)]
    assets = [d for d in graph_defs if not isinstance(d, dg.AssetChecksDefinition)]
    defs = dg.Definitions(assets=assets, asset_checks=checks,  # the assets carry their resources already
                          jobs=[dg.define_asset_job(name, executor_def=dg.in_process_executor,
                                                    selection=[predictions_asset_name(family),
                                                               metrics_asset_name(family)])])
    return defs.resolve_job_def(name)


def _run_here(context: dg.AssetExecutionContext, job, work: list, config, family) -> None:
    """No daemon to start queued runs: the runs execute in this process, at most as many at once
    as the instance's limits allow (per pool too), and this run waits for them."""
    from dagster._core.errors import DagsterExecutionInterruptedError

    from pipelines.dagster.launch import execute_partition, fail_in_flight, run_bounded
    from pipelines.dagster.plan import Planned
    from pipelines.dagster.report import Outcome, failure

    instance, data = context.instance, context.resources.medbench.data()
    root = instance.root_directory
    limits = read_limits(Path(root)) if root else Limits()
    by_key = {ev.partition_key: ev for ev in work}

    def launch(p: Planned, token: str) -> Outcome:
        result = execute_partition(job, p, token, instance, data.root, run_config=_run_config(family, config),
                                   tags=_child_tags(context, by_key[p.partition], p.pool))
        return Outcome(p.partition, "ran" if result.success else "failed", p.run_id,
                       "" if result.success else failure(result))

    planned = [Planned(ev.partition_key, ev.task, ev.model, "run", ev.run_id, ev.backend.pool(ev.model)) for ev in work]
    outcomes, interrupted = run_bounded(planned, limits.max_runs, limits, launch, log=context.log.info,
                                        on_interrupt=lambda tokens: fail_in_flight(
                                            instance, tokens, context.log.info,
                                            f"its ranged run {context.run_id} was stopped"),
                                        interrupts=(KeyboardInterrupt, DagsterExecutionInterruptedError))
    failed = [f"{o.partition}: {o.detail}" for o in outcomes if o.status != "ran"]
    if interrupted or failed:
        raise dg.Failure(description="; ".join(failed) or "interrupted")
