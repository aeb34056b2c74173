"""Asset factory for the evaluations of one task family: ``<family>_predictions`` and
``<family>_metrics``, partitioned by the family's own partitions (``<family>_evaluations``, keys
``<task>@<version>|<model slug>``), depending only on the family's instances asset.

Rule one inside the pipeline: a partition whose run already finished (its result.json exists) is
reused, never rerun, unless the run config says ``force``. Both assets report the medbench run id
as their ``DataVersion`` (the run id already hashes the model, task spec and snapshot), and the
family's task spec hash as ``code_version``, so the UI's "stale" follows what a run id follows.
Their checks read the stored files and can be re-run alone, per partition. A pair whose model
cannot run here is materialized as skipped, with its reason (``evaluation_records.py``).

Both assets have a single-run backfill policy: a backfill is one ranged run that applies rule one
to all its partitions at once and starts runs only for those that need work (``ranged.py``).
"""


import warnings

import dagster as dg

from pipelines.dagster import engine_calls as engine
from pipelines.dagster.partitions import metrics_asset_name, partitions_def, predictions_asset_name
from pipelines.dagster.resources import MedbenchResource
from pipelines.dagster.engine_calls import Specs
from medbench.kinds import kind as kind_of
from pipelines.tasks.base import CheckOutcome

from .checks import outcome_check
from .evaluation_records import (
    SKIPPED_PREFIX,
    invalid_key_reason,
    metrics_metadata,
    predictions_metadata,
    skipped_metadata,
    skipped_outcome,
)
from .metadata import typed
from .ranged import evaluate_range

MIN_PARSE_RATE = 0.5


class EvaluationConfig(dg.Config):
    """How to treat a partition that was already evaluated (by default it is reused: rule one).

    ``force``: re-score the stored raw model outputs (no model call when the generation is stored)
    and overwrite that run's predictions and result.json. ``regenerate``: also discard the stored
    raw outputs of the run's generation key first (moved aside, not deleted), so the model is
    called again; it implies ``force``.
    """

    force: bool = False
    regenerate: bool = False

    @property
    def recompute(self) -> bool:
        return self.force or self.regenerate


def _plan(partition_key: str, medbench: MedbenchResource) -> engine.Evaluation:
    specs = medbench.specs()
    if reason := invalid_key_reason(partition_key, specs):
        raise dg.Failure(description=reason, allow_retries=False)
    task_ref, model_slug = engine.split_partition_key(partition_key)
    return engine.resolve_evaluation(specs, medbench.data(), task_ref, model_slug)


def _skip(context: dg.AssetExecutionContext, ev: engine.Evaluation, reason: str):
    """A pair that cannot run here: materialized as skipped (no files, ``skipped_reason`` on the
    partition, data version ``skipped:<run id>``), so neither the run nor a backfill over it ends
    red, and nothing is published for it. Rule one looks for result.json, not for this record: a
    later run where the model can run evaluates the pair."""
    meta = skipped_metadata(ev.partition_key, ev.model.slug, ev.run_id, reason)
    context.log.warning(meta["skipped_reason"])
    yield dg.MaterializeResult(data_version=dg.DataVersion(SKIPPED_PREFIX + ev.run_id), metadata=typed(meta))


def _evaluation_asset(**kwargs):
    """``dg.asset`` with the single-run backfill policy (``ranged.py``); Dagster marks that
    parameter beta, hence the narrow warning filter around the definition."""
    def wrap(fn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=dg.BetaWarning)
            return dg.asset(backfill_policy=dg.BackfillPolicy.single_run(), **kwargs)(fn)
    return wrap


def evaluation_assets(family, specs: Specs, instances: dg.AssetsDefinition
                      ) -> tuple[dg.AssetsDefinition, dg.AssetsDefinition, list[dg.AssetChecksDefinition]]:
    """The family's predictions and metrics assets and their checks. Pools are run-level (a run's
    ``medbench/pool`` tag, ``limits.py``), not op-level: one evaluation is one run."""
    parts = partitions_def(family.name)
    family_hash = engine.family_spec_hash(specs, family.name)

    @_evaluation_asset(name=predictions_asset_name(family), group_name="evaluations", kinds={"parquet"},
              partitions_def=parts, deps=[instances], code_version=family_hash, output_required=False,
              description=f"Per-item predictions of one model on one {family.name} task version "
                          "(artifacts/<run_id>/predictions.parquet). A pair whose model cannot run here "
                          "is skipped (see the partition's skipped_reason), not failed.")
    def predictions(context: dg.AssetExecutionContext, medbench: MedbenchResource, config: EvaluationConfig):
        if not context.has_partition_key:  # a backfill's ranged run: every partition at once (ranged.py)
            yield from evaluate_range(context, medbench, config, family, family_hash, instances.key, verdicts)
            return
        data = medbench.data()
        from pipelines.dagster.submission_flow import mark_running

        mark_running(context.run.tags, context.run_id, data, context.log.info)  # a submission's run: running now
        ev = _plan(context.partition_key, medbench)
        reused = engine.existing_result(data, ev.run_id) is not None and not config.recompute
        if reused:
            context.log.info(f"{ev.partition_key}: run {ev.run_id} already evaluated; reusing it (rule one)")
        else:
            if reason := ev.backend.not_runnable_reason(ev.model, data):
                yield from _skip(context, ev, reason)
                return
            if config.regenerate:
                for moved in engine.discard_generation(ev, data):
                    context.log.info(f"{ev.partition_key}: regenerate: moved stored raw outputs to {moved}")
            engine.make_predictions(ev, data, context.log.info)
        yield dg.MaterializeResult(data_version=dg.DataVersion(ev.run_id),
                                   metadata=typed(predictions_metadata(data, ev.run_id, ev.snapshot_id, reused)))

    @_evaluation_asset(name=metrics_asset_name(family), group_name="evaluations", kinds={"json"},
              partitions_def=parts, deps=[predictions], code_version=family_hash, output_required=False,
              description=f"Metrics with seeded bootstrap 95% CIs and the full result record of one {family.name} "
                          "evaluation (artifacts/<run_id>/result.json). Skipped with its predictions.")
    def metrics(context: dg.AssetExecutionContext, medbench: MedbenchResource, config: EvaluationConfig):
        if not context.has_partition_key:  # a ranged run without the predictions asset
            yield from evaluate_range(context, medbench, config, family, family_hash, instances.key, verdicts)
            return
        specs_now, data = medbench.specs(), medbench.data()
        ev = _plan(context.partition_key, medbench)
        record = engine.existing_result(data, ev.run_id)
        reused = record is not None and not config.recompute
        if not reused:
            if not data.predictions_path(ev.run_id).exists() and (reason := ev.backend.not_runnable_reason(ev.model, data)):
                yield from _skip(context, ev, reason)
                return
            record = engine.compute_metrics(ev, specs_now, data, context.log.info)
        assert record is not None
        yield dg.MaterializeResult(data_version=dg.DataVersion(record.run_id),
                                   metadata=typed(metrics_metadata(data, record, reused)))

    names = engine.check_names("predictions", family)

    def prediction_outcomes(partition_key: str, medbench: MedbenchResource) -> list[CheckOutcome]:
        ev, data = _plan(partition_key, medbench), medbench.data()
        if not data.predictions_path(ev.run_id).exists():  # not evaluated (or skipped): a warning, not red
            if reason := ev.backend.not_runnable_reason(ev.model, data):
                return [skipped_outcome(n, partition_key, ev.model.slug, ev.run_id, reason) for n, _ in names]
            return [CheckOutcome(n, False, f"no predictions for run {ev.run_id}: not materialized yet",
                                 {"run_id": ev.run_id}, "warn") for n, _ in names]
        return engine.prediction_checks(ev, data)

    parses = kind_of(family.kind).parses_replies  # a parse rate exists only where replies are parsed into answers

    def metrics_outcomes(partition_key: str, medbench: MedbenchResource) -> list[CheckOutcome]:
        return ([_parse_rate(partition_key, medbench)] if parses else []) + [_publishable(partition_key, medbench)]

    # What each asset's checks say about a partition: the check steps call these, and a ranged run
    # calls them for the partitions it records without running the check steps (ranged.py).
    verdicts = {predictions.key: prediction_outcomes, metrics.key: metrics_outcomes}

    def by_partition(outcomes):
        return lambda context, medbench: outcomes(context.op_execution_context.partition_key, medbench)

    checks = [outcome_check(predictions, name, description, by_partition(prediction_outcomes), parts)
              for name, description in names]
    if parses:
        checks.append(outcome_check(
            metrics, "parse_rate_reasonable",
            f"At least {MIN_PARSE_RATE:.0%} of the model's replies parsed to an option (a warning: a low rate "
            "usually means a prompt or parser problem, not a weak model). A model that knows nothing is "
            "expected to warn here: the demo's medbench/tiny-llama (random weights) parses 0% of its replies, "
            "and its verdict quotes its spec's description saying so.",
            by_partition(metrics_outcomes), parts))
    checks.append(outcome_check(
        metrics, "metrics_publishable",
        "Every metric the task reports was published as a number: none was withheld as undefined (no value, "
        "e.g. one class only) or degenerate (a bootstrap interval of zero width, or defined in fewer than half "
        "the replicates). A failure names each withheld metric and why; the result and its leaderboard row "
        "list them under `withheld` (docs/statistics.md, \"Withheld metrics\").",
        by_partition(metrics_outcomes), parts))
    return predictions, metrics, checks


def _publishable(partition_key: str, medbench: MedbenchResource) -> CheckOutcome:
    """From the stored result.json: fails, naming them, when the validity gate withheld metrics."""
    ev = _plan(partition_key, medbench)
    data = medbench.data()
    record = engine.existing_result(data, ev.run_id)
    if record is None:
        if reason := ev.backend.not_runnable_reason(ev.model, data):
            return skipped_outcome("metrics_publishable", partition_key, ev.model.slug, ev.run_id, reason)
        return CheckOutcome("metrics_publishable", False, f"no result.json for run {ev.run_id}",
                            {"run_id": ev.run_id}, "warn")
    verdict = "; ".join(f"{w.name} withheld: {w.reason}" for w in record.withheld)
    return CheckOutcome("metrics_publishable", not record.withheld, verdict,
                        {"run_id": ev.run_id, "withheld": [w.name for w in record.withheld]}, "warn")


def _parse_rate(partition_key: str, medbench: MedbenchResource) -> CheckOutcome:
    """From the stored result.json; a missing file or parse rate fails (never passes vacuously). A
    low rate's verdict quotes the model spec's description: a model built to show noise (random
    weights) says so there, and the maintainer reading the warning should not need to look it up."""
    ev = _plan(partition_key, medbench)
    data = medbench.data()
    record = engine.existing_result(data, ev.run_id)
    if record is None and (reason := ev.backend.not_runnable_reason(ev.model, data)):
        return skipped_outcome("parse_rate_reasonable", partition_key, ev.model.slug, ev.run_id, reason)
    if record is None or record.parse_rate is None:
        what = "no result.json" if record is None else "no parse rate in result.json"
        return CheckOutcome("parse_rate_reasonable", False, f"{what} for run {ev.run_id}",
                            {"run_id": ev.run_id}, "warn")
    passed = record.parse_rate >= MIN_PARSE_RATE
    verdict = "" if passed else (
        f"{record.parse_rate:.1%} of {ev.model.slug}'s replies parsed to an option (below {MIN_PARSE_RATE:.0%}). "
        f"Its spec says: {ev.model.description.strip()} If that describes a model meant to produce noise, this "
        "warning is its expected result; otherwise look at the prompt and the answer parser.")
    return CheckOutcome("parse_rate_reasonable", passed, verdict,
                        {"run_id": ev.run_id, "parse_rate": float(record.parse_rate), "min": MIN_PARSE_RATE,
                         "model": ev.model.slug}, "warn")
