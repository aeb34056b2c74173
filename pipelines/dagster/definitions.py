"""The Dagster code location: ``dagster dev -w workspace.yaml`` loads ``defs`` from here.

The assets are made per dataset and per task family from the task registry (``engine_calls``),
with code versions from the specs as loaded when the code location loads (reload it in the UI
after editing a spec). Jobs: ``materialize_inputs`` (every snapshot and instances asset),
``evaluate_<family>`` (one family's partitioned predictions and metrics; one job per family since
each family has its own partitions), ``publish``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dagster as dg

from pipelines.dagster import engine_calls as engine
from pipelines.dagster.assets.evaluations import evaluation_assets
from pipelines.dagster.assets.inputs import instances_asset, snapshot_asset, snapshot_asset_name
from pipelines.dagster.assets.published import published_asset
from pipelines.dagster.partitions import asset_prefix
from pipelines.dagster.resources import MedbenchResource
from pipelines.dagster.sensors import evaluation_partitions_sensor
from pipelines.engine.specs import Specs, load_specs


@dataclass
class FamilyAssets:
    """One family's asset names, as the CLI selects them."""

    instances: str
    predictions: str
    metrics: str
    snapshot: str


@dataclass
class Built:
    assets: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    families: dict[str, FamilyAssets] = field(default_factory=dict)


def build(specs: Specs) -> Built:
    """Every asset and check: a snapshot per dataset the families read, then per family its
    instances, predictions and metrics, then the published warehouse over all metrics."""
    out = Built()
    # Only families whose dataset these specs define (a scratch specs directory may hold one family).
    families = {n: f for n, f in engine.families().items() if f.dataset in specs.datasets}
    for dataset in sorted({f.dataset for f in families.values()}):
        out.assets.append(snapshot_asset(dataset, specs))
    metrics_assets = []
    for family in families.values():
        instances, instance_checks = instances_asset(family, specs)
        predictions, metrics, evaluation_checks = evaluation_assets(family, specs, instances)
        out.assets += [instances, predictions, metrics]
        out.checks += instance_checks + evaluation_checks
        metrics_assets.append(metrics)
        out.families[family.name] = FamilyAssets(instances.key.to_user_string(), predictions.key.to_user_string(),
                                                 metrics.key.to_user_string(), snapshot_asset_name(family.dataset))
    out.assets.append(published_asset(metrics_assets))
    return out


BUILT = build(load_specs())
ASSETS = BUILT.assets
CHECKS = BUILT.checks
FAMILY_ASSETS = BUILT.families

inputs_job = dg.define_asset_job("materialize_inputs", selection=dg.AssetSelection.groups("snapshots", "instances"))
evaluation_jobs = [dg.define_asset_job(f"evaluate_{asset_prefix(name)}", selection=[fa.predictions, fa.metrics])
                   for name, fa in FAMILY_ASSETS.items()]
publish_job = dg.define_asset_job("publish", selection=["published_warehouse"])

defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=CHECKS,
    jobs=[inputs_job, *evaluation_jobs, publish_job],
    sensors=[evaluation_partitions_sensor],
    resources={"medbench": MedbenchResource()},
)
