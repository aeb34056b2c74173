"""Ranged runs: a backfill's one run over many evaluation partitions, rule one first.

Why: the evaluation assets have a single-run backfill policy, so a backfill from the UI ("Launch
backfill", "Materialize all", a job's partitions) is one run for a family's partitions, not one
run (one process loading the code location, seconds) per partition. In that run the predictions
step decides every partition as ``medbench materialize`` does, without a run each:

* **reused** (its result.json exists, no ``force``): a materialization of predictions and of
  metrics for the partition, with the same metadata, data version (the run id) and code version as
  a run of that partition alone would record, and the inputs they were made from;
* **skipped** (its model cannot run here): a materialization marked skipped, with the reason;
* **needs work**: its own run of ``evaluate_<family>`` (tagged, with its checks), in the same
  backfill. With the queued coordinator and a live daemon (``dagster dev``, ``deploy/``) the runs
  are queued and the daemon starts them within the pool limits, while this run ends; otherwise
  they run here, bounded by the same limits (``launch.py``), and this run waits for them.

Every partition of the range then has a materialization from a run of the backfill, so the
backfill ends green. The step yields no output: the metrics step and the check steps of this run
are skipped, and their records are made here: the materializations, and each check's verdict on
every reused partition (evaluated from the stored files, as the check itself does) and skipped pair
(a warning saying skipped, and why); a new evaluation's checks run in its own run.
"""

from __future__ import annotations

import dagster as dg

from pipelines.dagster import engine_calls as engine
from pipelines.dagster.partitions import evaluation_job_name, metrics_asset_name, predictions_asset_name
from pipelines.dagster.private_api import BACKFILL_ID_TAG, check_target, repository_job

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


def evaluate_range(context: dg.AssetExecutionContext, medbench, config, family, family_hash: str,
                   instances_key: dg.AssetKey, verdicts: dict):
    """Rule one for every partition of the run's range, then the work (see the module docstring);
    yields the materializations (yielded, not logged, so each is stored before the next asset's
    records read their input pointers) and the check evaluations on them. ``verdicts``: asset key
    -> (partition key, medbench) -> that asset's check outcomes, the functions its checks call."""
    specs, data = medbench.specs(), medbench.data()
    keys = list(context.partition_keys)
    bad = [reason for key in keys if (reason := invalid_key_reason(key, specs))]
    if bad:
        raise dg.Failure(description="; ".join(bad), allow_retries=False)
    pred_key, metrics_key = dg.AssetKey(predictions_asset_name(family)), dg.AssetKey(metrics_asset_name(family))
    # The assets this run materializes (a backfill may select one of the two).
    selected = set(context.job_def.asset_layer.selected_asset_keys)
    if context.run.asset_selection:
        selected &= set(context.run.asset_selection)
    keys_recorded = [k for k in (pred_key, metrics_key) if k in selected]
    reused, skipped, work = [], [], []
    for key in keys:
        ev = engine.resolve_evaluation(specs, data, *engine.split_partition_key(key))
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
    """Materializations recorded by the ranged run, tagged as Dagster tags a step's own output, and
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
        """One evaluation per planned check and recorded partition, pointing at the materialization
        just recorded (yielded after it, so it is stored)."""
        check_keys = self._check_keys(asset_key)
        if not check_keys or not (reused or skipped):
            return
        partitions = [ev.partition_key for ev, _ in reused + skipped]
        targets = _materializations(self.context.instance, asset_key, partitions, self.context.run.run_id)
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


def _materializations(instance, asset_key: dg.AssetKey, partitions: list[str], run_id: str) -> dict:
    """partition -> the target data (storage id, run, time) of its materialization by ``run_id``."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=partitions), limit=len(partitions) * 2).records
    out = {}
    for rec in records:  # newest first
        if rec.run_id == run_id and rec.partition_key not in out:
            out[rec.partition_key] = check_target(rec.storage_id, rec.run_id, rec.timestamp)
    return out


def _run_config(family, config) -> dict:
    op = {"config": {"force": config.force, "regenerate": config.regenerate}}
    return {"ops": {predictions_asset_name(family): op, metrics_asset_name(family): op}}


def _start_work(context: dg.AssetExecutionContext, work: list, config, family) -> None:
    """The partitions that need work as runs of ``evaluate_<family>``: queued to the instance, or
    run here and waited for (``submit.py``); a failed one fails this run, with its reason."""
    from pipelines.orchestration.plan import Planned
    from pipelines.dagster.child_runs import start_partition_runs

    job = repository_job(context, evaluation_job_name(family.name))
    planned = [Planned(ev.partition_key, ev.task, ev.model, "run", ev.run_id, ev.backend.pool(ev.model)) for ev in work]
    outcomes = start_partition_runs(context, job or _evaluation_job(context, family), job is not None, planned,
                                    _run_config(family, config))
    failed = [f"{o.partition}: {o.detail}" for o in outcomes or [] if o.status != "ran"]
    if failed:
        raise dg.Failure(description="; ".join(failed))


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
