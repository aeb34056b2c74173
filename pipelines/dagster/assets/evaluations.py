"""Asset factory for the evaluations of one task family: ``<family>_predictions`` and
``<family>_metrics``, partitioned by the family's own partitions (``<family>_evaluations``, keys
``<task>@<version>|<model slug>``), depending only on the family's instances asset.

Rule one inside the pipeline: a partition whose run already finished (its result.json exists) is
reused, never rerun, unless the run config says ``force``. Both assets report the medbench run id
as their ``DataVersion`` (the run id already hashes the model, task spec and snapshot), and the
family's task spec hash as ``code_version``, so the UI's "stale" follows what a run id follows.
Their checks read the stored files and can be re-run alone, per partition.
"""


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
    """``force: true`` recomputes an evaluated partition (predictions and metrics) instead of reusing it."""

    force: bool = False


def predictions_asset_name(family) -> str:
    return f"{asset_prefix(family.name)}_predictions"


def metrics_asset_name(family) -> str:
    return f"{asset_prefix(family.name)}_metrics"


def _plan(partition_key: str, medbench: MedbenchResource) -> engine.Evaluation:
    task_ref, model_slug = engine.split_partition_key(partition_key)
    return engine.plan(medbench.specs(), medbench.data(), task_ref, model_slug)


def evaluation_assets(family, specs: Specs, instances: dg.AssetsDefinition
                      ) -> tuple[dg.AssetsDefinition, dg.AssetsDefinition, list[dg.AssetChecksDefinition]]:
    """The family's predictions and metrics assets and their checks."""
    parts = partitions_def(family.name)
    family_hash = engine.family_spec_hash(specs, family.name)

    @dg.asset(name=predictions_asset_name(family), group_name="evaluations", kinds={"parquet"},
              partitions_def=parts, deps=[instances], code_version=family_hash,
              description=f"Per-item predictions of one model on one {family.name} task version "
                          "(artifacts/<run_id>/predictions.parquet).")
    def predictions(context: dg.AssetExecutionContext, medbench: MedbenchResource,
                    config: EvaluationConfig) -> dg.MaterializeResult:
        data = medbench.data()
        ev = _plan(context.partition_key, medbench)
        reused = engine.existing_result(data, ev.run_id) is not None and not config.force
        if reused:
            context.log.info(f"{ev.partition_key}: run {ev.run_id} already evaluated; reusing it (rule one)")
        else:
            reason = not_runnable_reason(ev.model)
            if reason:
                raise dg.Failure(description=f"{ev.model.slug}: {reason}")
            engine.make_predictions(ev, data, context.log.info)
        import pyarrow.parquet as pq

        path = data.predictions_path(ev.run_id)
        return dg.MaterializeResult(
            data_version=dg.DataVersion(ev.run_id),
            metadata=typed({"run_id": ev.run_id, "rows": pq.read_metadata(path).num_rows, "reused": reused,
                            "snapshot_id": ev.snapshot_id, "path": path}))

    @dg.asset(name=metrics_asset_name(family), group_name="evaluations", kinds={"json"},
              partitions_def=parts, deps=[predictions], code_version=family_hash,
              description=f"Metrics with seeded bootstrap 95% CIs and the full result record of one {family.name} "
                          "evaluation (artifacts/<run_id>/result.json).")
    def metrics(context: dg.AssetExecutionContext, medbench: MedbenchResource,
                config: EvaluationConfig) -> dg.MaterializeResult:
        specs_now, data = medbench.specs(), medbench.data()
        ev = _plan(context.partition_key, medbench)
        record = engine.existing_result(data, ev.run_id)
        reused = record is not None and not config.force
        if not reused:
            record = engine.compute_metrics(ev, specs_now, data, context.log.info)
        assert record is not None
        p = record.primary
        return dg.MaterializeResult(
            data_version=dg.DataVersion(record.run_id),
            metadata=typed({"run_id": record.run_id, "reused": reused, "n": record.n, "primary_metric": p.name,
                            p.name: float(p.value), "ci_low": float(p.ci_low), "ci_high": float(p.ci_high),
                            "parse_rate": record.parse_rate, "cost_usd": float(record.cost_usd),
                            "path": data.result_path(record.run_id)}))

    def prediction_outcomes(context: dg.AssetCheckExecutionContext, medbench: MedbenchResource):
        return engine.prediction_checks(_plan(context.op_execution_context.partition_key, medbench), medbench.data())

    checks = [outcome_check(predictions, name, description, prediction_outcomes, parts)
              for name, description in engine.check_names("predictions", family)]
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
