"""Skipped pairs recorded in Dagster by ``medbench materialize``, without a run.

Why: rule one (``plan.py``) decides a pair that cannot run here (a vLLM model without a GPU) as
``skip`` and launches nothing for it, so until this record the UI showed its predictions and metrics
partitions as *missing*: grey lineage boxes, "Missing (1)", and a launch dialog warning that
upstream materializations are not available. A backfill's ranged run (``assets/ranged.py``)
already materialized such pairs as skipped; the CLI now records the same thing: for the predictions
and the metrics asset, a materialization with ``skipped_reason``, ``evaluated: false``, the data
version ``skipped:<run id>`` and no files, and each of their checks' verdict (a warning saying
skipped, and why), so no check is left unexecuted either.

Like rule one's reuse records (``rule_one.record_reuses``), only where Dagster does not already show
the partition's newest materialization with that data version: a repeated pass writes nothing.
Rule one looks for result.json, never for this record, so the pair is evaluated wherever its model
can run.
"""

from __future__ import annotations

import dagster as dg

from pipelines.dagster import engine_calls as engine
from pipelines.dagster.assets.checks import evaluation
from pipelines.dagster.assets.evaluation_records import (
    SKIPPED_PREFIX,
    input_tags,
    record_tags,
    skipped_metadata,
    skipped_outcome,
)
from pipelines.dagster.assets.metadata import typed
from pipelines.dagster.inputs_state import latest_versions


def record_skips(instance: dg.DagsterInstance, built, specs, skipped: list) -> int:
    """Record every ``skipped`` Planned pair Dagster does not already show as skipped with its run
    id (predictions first, so the metrics records point at them); returns the materializations written."""
    by_family: dict[str, list] = {}
    for p in skipped:
        if p.run_id:  # a run id needs a current snapshot; without one there is nothing to name
            by_family.setdefault(p.task.family, []).append(p)
    recorded = 0
    for family, planned in by_family.items():
        fa = built.families[family]
        code_version = engine.family_spec_hash(specs, family)
        predictions, metrics = dg.AssetKey.from_user_string(fa.predictions), dg.AssetKey.from_user_string(fa.metrics)
        for asset_key, upstream, partitioned in ((predictions, dg.AssetKey.from_user_string(fa.instances), False),
                                                 (metrics, predictions, True)):
            shown = latest_versions(instance, asset_key, [p.partition for p in planned], observations=False)
            todo = [p for p in planned if shown.get(p.partition, (0, ""))[1] != SKIPPED_PREFIX + p.run_id]
            inputs = input_tags(instance, upstream, partitioned, [p.partition for p in todo])
            checks = _check_keys(built, asset_key)
            for p in todo:
                meta = skipped_metadata(p.partition, p.model.slug, p.run_id, p.reason)
                instance.report_runless_asset_event(dg.AssetMaterialization(
                    asset_key=asset_key, partition=p.partition, metadata=typed(meta),
                    tags=record_tags(SKIPPED_PREFIX + p.run_id, code_version, inputs.get(p.partition, {}))))
                for key in checks:
                    outcome = skipped_outcome(key.name, p.partition, p.model.slug, p.run_id, p.reason)
                    instance.report_runless_asset_event(evaluation(key, outcome, p.partition))
            recorded += len(todo)
    return recorded


def _check_keys(built, asset_key: dg.AssetKey) -> list[dg.AssetCheckKey]:
    return sorted((key for checks in built.checks for key in checks.check_keys if key.asset_key == asset_key),
                  key=lambda k: k.name)
