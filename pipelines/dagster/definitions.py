"""The Dagster code location: ``dagster dev -w workspace.yaml`` loads ``defs`` from here."""

from __future__ import annotations

import dagster as dg

from pipelines.dagster.assets.evaluations import metrics, predictions
from pipelines.dagster.assets.inputs import clinicalqa_items, clinicalqa_snapshot, vitaldb_ioh_windows, vitaldb_snapshot
from pipelines.dagster.assets.published import published_warehouse
from pipelines.dagster.resources import MedbenchResource
from pipelines.dagster.sensors import evaluation_partitions_sensor

ASSETS = [clinicalqa_snapshot, vitaldb_snapshot, clinicalqa_items, vitaldb_ioh_windows, predictions, metrics,
          published_warehouse]

inputs_job = dg.define_asset_job(
    "materialize_inputs", selection=["clinicalqa_snapshot", "vitaldb_snapshot", "clinicalqa_items", "vitaldb_ioh_windows"],
)
evaluation_job = dg.define_asset_job("evaluate", selection=["predictions", "metrics"])
publish_job = dg.define_asset_job("publish", selection=["published_warehouse"])

defs = dg.Definitions(
    assets=ASSETS,
    jobs=[inputs_job, evaluation_job, publish_job],
    sensors=[evaluation_partitions_sensor],
    resources={"medbench": MedbenchResource()},
)
