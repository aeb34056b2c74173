"""Assets holding each evaluation's per-item predictions and its metrics, partitioned by
(task version, model). Rule one inside the pipeline: a partition whose run already finished is
reused (its result.json exists), never rerun, unless the run config says ``force``."""


import dagster as dg
import pyarrow.parquet as pq

from pipelines.engine import evaluate as runs
from pipelines.backends.registry import not_runnable_reason
from pipelines.dagster.partitions import EVALUATIONS
from pipelines.dagster.resources import MedbenchResource

PREDICTION_CHECKS = ("every_instance_predicted_once", "scores_finite")


class EvaluationConfig(dg.Config):
    force: bool = False


def _plan(context: dg.AssetExecutionContext, medbench: MedbenchResource) -> runs.Evaluation:
    task_ref, model_slug = runs.split_partition_key(context.partition_key)
    return runs.plan(medbench.specs(), medbench.data(), task_ref, model_slug)


def evaluation_assets(instance_assets: list[str]) -> list[dg.AssetsDefinition]:
    """The partitioned ``predictions`` and ``metrics`` assets, downstream of every instances asset."""

    @dg.asset(
        group_name="evaluations", kinds={"parquet"}, partitions_def=EVALUATIONS, deps=instance_assets,
        check_specs=[dg.AssetCheckSpec(check, asset="predictions") for check in PREDICTION_CHECKS],
    )
    def predictions(context: dg.AssetExecutionContext, medbench: MedbenchResource,
                    config: EvaluationConfig) -> dg.MaterializeResult:
        """Per-item predictions of one model on one task version (artifacts/<run_id>/predictions.parquet)."""
        data = medbench.data()
        ev = _plan(context, medbench)
        existing = runs.existing_result(data, ev.run_id)
        reused = existing is not None and not config.force
        if reused:
            context.log.info(f"{ev.partition_key}: run {ev.run_id} already evaluated; reusing it (rule one)")
        else:
            reason = not_runnable_reason(ev.model)
            if reason:
                raise dg.Failure(description=f"{ev.model.slug}: {reason}")
            runs.make_predictions(ev, data, context.log.info)
        rows = pq.ParquetFile(data.predictions_path(ev.run_id)).metadata.num_rows
        outcomes = {o.name: o for o in runs.prediction_checks(ev, data)}
        return dg.MaterializeResult(
            metadata={"run_id": ev.run_id, "rows": rows, "reused": reused,
                      "path": str(data.predictions_path(ev.run_id))},
            check_results=[
                dg.AssetCheckResult(check_name=check, passed=outcomes[check].passed, metadata=outcomes[check].metadata)
                if check in outcomes else
                dg.AssetCheckResult(check_name=check, passed=True, metadata={"applies": f"not to {ev.task.family}"})
                for check in PREDICTION_CHECKS
            ],
        )

    @dg.asset(
        group_name="evaluations", kinds={"json"}, partitions_def=EVALUATIONS, deps=[predictions],
        check_specs=[dg.AssetCheckSpec("parse_rate_reasonable", asset="metrics")],
    )
    def metrics(context: dg.AssetExecutionContext, medbench: MedbenchResource,
                config: EvaluationConfig) -> dg.MaterializeResult:
        """Metrics with seeded bootstrap 95% CIs and the full result record (artifacts/<run_id>/result.json)."""
        specs, data = medbench.specs(), medbench.data()
        ev = _plan(context, medbench)
        record = runs.existing_result(data, ev.run_id)
        reused = record is not None and not config.force
        if not reused:
            record = runs.compute_metrics(ev, specs, data, context.log.info)
        assert record is not None
        p = record.primary
        parse_ok = record.parse_rate is None or record.parse_rate >= 0.5
        return dg.MaterializeResult(
            metadata={
                "run_id": record.run_id, "reused": reused, "n": record.n,
                p.name: dg.MetadataValue.float(p.value),
                "95% CI": f"[{p.ci_low:.4f}, {p.ci_high:.4f}]",
                "parse_rate": dg.MetadataValue.float(record.parse_rate) if record.parse_rate is not None else "n/a",
                "cost_usd": dg.MetadataValue.float(record.cost_usd),
            },
            check_results=[dg.AssetCheckResult(
                check_name="parse_rate_reasonable", passed=parse_ok, severity=dg.AssetCheckSeverity.WARN,
                metadata={"parse_rate": str(record.parse_rate)})],
        )

    return [predictions, metrics]
