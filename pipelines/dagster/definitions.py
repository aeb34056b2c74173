"""The Dagster code location: ``dagster dev -w workspace.yaml`` loads ``defs`` from here.

The input assets come from the registries (one snapshot asset per dataset, one instances asset per
task family); ``build_assets()`` rebuilds them, so a family registered at runtime (a test's toy
family) gets its assets too.
"""

from __future__ import annotations

import dagster as dg

from pipelines.dagster.assets.evaluations import evaluation_assets
from pipelines.dagster.assets.inputs import instances_asset, snapshot_asset, snapshot_asset_name
from pipelines.dagster.assets.published import published_warehouse
from pipelines.dagster.resources import MedbenchResource
from pipelines.dagster.sensors import evaluation_partitions_sensor
from pipelines.datasets.registry import datasets
from pipelines.tasks.registry import families


def input_asset_names() -> list[str]:
    """Snapshot assets then instances assets, in registry order."""
    return ([snapshot_asset_name(slug) for slug in datasets()]
            + [fam.instances_asset for fam in families().values()])


def build_assets() -> list[dg.AssetsDefinition]:
    snapshots = [snapshot_asset(slug) for slug in datasets()]
    instances = [instances_asset(fam) for fam in families().values()]
    return [*snapshots, *instances, *evaluation_assets([fam.instances_asset for fam in families().values()]),
            published_warehouse]


ASSETS = build_assets()

inputs_job = dg.define_asset_job("materialize_inputs", selection=input_asset_names())
evaluation_job = dg.define_asset_job("evaluate", selection=["predictions", "metrics"])
publish_job = dg.define_asset_job("publish", selection=["published_warehouse"])

defs = dg.Definitions(
    assets=ASSETS,
    jobs=[inputs_job, evaluation_job, publish_job],
    sensors=[evaluation_partitions_sensor],
    resources={"medbench": MedbenchResource()},
)
