"""Asset factory for the evaluations of one task family: ``<family>_predictions`` and
``<family>_metrics``, partitioned by the family's own partitions (``<family>_evaluations``, keys
``<task>@<version>|<model slug>``), depending only on the family's instances asset.

Rule one inside the pipeline: a partition whose run already finished (its result.json exists) is
reused, never rerun, unless the run config says ``force``. Both assets report the medbench run id
as their ``DataVersion`` (the run id already hashes the model, task spec and snapshot), and the
family's task spec hash as ``code_version``, so the UI's "stale" follows what a run id follows.
Their checks read the stored files and can be re-run alone, per partition.
"""


import os

import dagster as dg

from pipelines.backends.registry import not_runnable_reason
from pipelines.dagster import engine_calls as engine
from pipelines.dagster.partitions import asset_prefix, partitions_def
from pipelines.dagster.resources import MedbenchResource
from pipelines.engine.specs import Specs
from pipelines.tasks.base import CheckOutcome

from .checks import outcome_check
from .metadata import typed

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


def predictions_asset_name(family) -> str:
    return f"{asset_prefix(family.name)}_predictions"


def metrics_asset_name(family) -> str:
    return f"{asset_prefix(family.name)}_metrics"


def public_url() -> str:
    return os.environ.get("MEDBENCH_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")


def run_links(run_id: str) -> dict:
    """The medbench run id and its ``/r/<run_id>`` page, on every evaluation's metadata."""
    return {"run_id": run_id, "result_page": dg.MetadataValue.url(f"{public_url()}/r/{run_id}")}


def invalid_key_reason(partition_key: str, specs: Specs) -> str | None:
    """One line naming why ``partition_key`` is not a (task, model) pair of the specs, else None.

    Why: a key added by hand in the UI must fail at once with a reason (the sensor deletes it on
    its next tick), not deep inside the engine with a traceback."""
    task_ref, sep, model_slug = partition_key.partition("|")
    if not sep:
        why = "expected <task>@<version>|<model slug>"
    elif task_ref not in specs.tasks:
        why = f"unknown task version {task_ref!r}"
    elif model_slug not in specs.models:
        why = f"unknown model {model_slug!r}"
    elif task_ref not in specs.models[model_slug].tasks:
        why = f"{model_slug} does not list {task_ref} among its tasks"
    else:
        return None
    return f"{partition_key} names no valid (task, model) pair in the specs: {why}"


def _plan(partition_key: str, medbench: MedbenchResource) -> engine.Evaluation:
    specs = medbench.specs()
    if reason := invalid_key_reason(partition_key, specs):
        raise dg.Failure(description=reason, allow_retries=False)
    task_ref, model_slug = engine.split_partition_key(partition_key)
    return engine.plan(specs, medbench.data(), task_ref, model_slug)


def _skip(context: dg.AssetExecutionContext, ev: engine.Evaluation, reason: str):
    """A pair that cannot run here: no materialisation (so not a failure, and nothing published), a
    log line and an observation carrying ``skipped_reason`` on the partition."""
    line = f"{ev.partition_key}: skipped, {ev.model.slug} cannot run here: {reason}"
    context.log.warning(line)
    yield dg.AssetObservation(asset_key=context.asset_key, partition=context.partition_key,
                              metadata=typed({"skipped_reason": line, **run_links(ev.run_id)}))


def evaluation_assets(family, specs: Specs, instances: dg.AssetsDefinition, pool: str | None = None
                      ) -> tuple[dg.AssetsDefinition, dg.AssetsDefinition, list[dg.AssetChecksDefinition]]:
    """The family's predictions and metrics assets and their checks (``pool``: an optional
    Dagster concurrency pool for both assets)."""
    parts = partitions_def(family.name)
    family_hash = engine.family_spec_hash(specs, family.name)
    pooled = {"pool": pool} if pool else {}

    @dg.asset(name=predictions_asset_name(family), group_name="evaluations", kinds={"parquet"},
              partitions_def=parts, deps=[instances], code_version=family_hash, output_required=False, **pooled,
              description=f"Per-item predictions of one model on one {family.name} task version "
                          "(artifacts/<run_id>/predictions.parquet). A pair whose model cannot run here "
                          "is skipped (see the partition's skipped_reason), not failed.")
    def predictions(context: dg.AssetExecutionContext, medbench: MedbenchResource, config: EvaluationConfig):
        data = medbench.data()
        ev = _plan(context.partition_key, medbench)
        reused = engine.existing_result(data, ev.run_id) is not None and not config.recompute
        if reused:
            context.log.info(f"{ev.partition_key}: run {ev.run_id} already evaluated; reusing it (rule one)")
        else:
            if reason := not_runnable_reason(ev.model):
                yield from _skip(context, ev, reason)
                return
            if config.regenerate:
                for moved in engine.discard_generation(ev, data):
                    context.log.info(f"{ev.partition_key}: regenerate: moved stored raw outputs to {moved}")
            engine.make_predictions(ev, data, context.log.info)
        import pyarrow.parquet as pq

        path = data.predictions_path(ev.run_id)
        yield dg.MaterializeResult(
            data_version=dg.DataVersion(ev.run_id),
            metadata=typed({**run_links(ev.run_id), "rows": pq.read_metadata(path).num_rows, "reused": reused,
                            "snapshot_id": ev.snapshot_id, "path": path}))

    @dg.asset(name=metrics_asset_name(family), group_name="evaluations", kinds={"json"},
              partitions_def=parts, deps=[predictions], code_version=family_hash, output_required=False, **pooled,
              description=f"Metrics with seeded bootstrap 95% CIs and the full result record of one {family.name} "
                          "evaluation (artifacts/<run_id>/result.json). Skipped with its predictions.")
    def metrics(context: dg.AssetExecutionContext, medbench: MedbenchResource, config: EvaluationConfig):
        specs_now, data = medbench.specs(), medbench.data()
        ev = _plan(context.partition_key, medbench)
        record = engine.existing_result(data, ev.run_id)
        reused = record is not None and not config.recompute
        if not reused:
            if not data.predictions_path(ev.run_id).exists() and (reason := not_runnable_reason(ev.model)):
                yield from _skip(context, ev, reason)
                return
            record = engine.compute_metrics(ev, specs_now, data, context.log.info)
        assert record is not None
        p = record.primary
        yield dg.MaterializeResult(
            data_version=dg.DataVersion(record.run_id),
            metadata=typed({**run_links(record.run_id), "reused": reused, "n": record.n, "primary_metric": p.name,
                            p.name: float(p.value), "ci_low": float(p.ci_low), "ci_high": float(p.ci_high),
                            "parse_rate": record.parse_rate, "cost_usd": float(record.cost_usd),
                            "path": data.result_path(record.run_id),
                            "predictions": data.predictions_path(record.run_id)}))

    names = engine.check_names("predictions", family)

    def prediction_outcomes(context: dg.AssetCheckExecutionContext, medbench: MedbenchResource):
        ev, data = _plan(context.op_execution_context.partition_key, medbench), medbench.data()
        if not data.predictions_path(ev.run_id).exists():  # not evaluated (or skipped): a warning, not red
            why = not_runnable_reason(ev.model) or "not materialised yet"
            return [CheckOutcome(n, False, f"no predictions for run {ev.run_id}: {why}", {"run_id": ev.run_id}, "warn")
                    for n, _ in names]
        return engine.prediction_checks(ev, data)

    checks = [outcome_check(predictions, name, description, prediction_outcomes, parts) for name, description in names]
    if family.kind == "choice":  # a parse rate exists only where replies are parsed into options
        checks.append(outcome_check(
            metrics, "parse_rate_reasonable",
            f"At least {MIN_PARSE_RATE:.0%} of the model's replies parsed to an option (a warning: a low rate "
            "usually means a prompt or parser problem, not a weak model).",
            lambda context, medbench: [_parse_rate(context.op_execution_context.partition_key, medbench)], parts))
    return predictions, metrics, checks


def _parse_rate(partition_key: str, medbench: MedbenchResource) -> CheckOutcome:
    """From the stored result.json; a missing file or parse rate fails (never passes vacuously)."""
    ev = _plan(partition_key, medbench)
    record = engine.existing_result(medbench.data(), ev.run_id)
    if record is None or record.parse_rate is None:
        what = "no result.json" if record is None else "no parse rate in result.json"
        return CheckOutcome("parse_rate_reasonable", False, f"{what} for run {ev.run_id}",
                            {"run_id": ev.run_id}, "warn")
    return CheckOutcome("parse_rate_reasonable", record.parse_rate >= MIN_PARSE_RATE, "",
                        {"run_id": ev.run_id, "parse_rate": float(record.parse_rate), "min": MIN_PARSE_RATE}, "warn")
