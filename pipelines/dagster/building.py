"""The code location's assets, checks and named jobs for a set of specs: what ``definitions`` (the
code location) and the runs that launch jobs in-process (``orchestrate``, ``evaluate_all``) share.

Kept apart from ``definitions``, which lists ``evaluate_all_job`` among its jobs, so that
``evaluate_all`` can build the same jobs without importing the module that imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dagster as dg

from pipelines.dagster import engine_calls as engine
from pipelines.dagster.assets.evaluations import evaluation_assets
from pipelines.dagster.assets.inputs import instances_asset, snapshot_asset, snapshot_asset_name
from pipelines.dagster.assets.published import published_asset
from pipelines.dagster.partitions import evaluation_job_name
from pipelines.dagster.engine_calls import Specs


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
    families = {n: f for n, f in engine.families(specs).items() if f.dataset in specs.datasets}
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


def named_jobs(families: dict[str, FamilyAssets]) -> list[dg.UnresolvedAssetJobDefinition]:
    """The named jobs, with descriptions, for the UI and for the CLI (which can run the same jobs
    instead of an anonymous asset job, so every run shows under one of these names)."""
    inputs_job = dg.define_asset_job(
        "materialize_inputs", selection=dg.AssetSelection.groups("snapshots", "instances"),
        description="Every dataset snapshot and task instances asset (what the evaluations read).")
    # In-process: a reused partition costs milliseconds of engine work, so a step subprocess per
    # partition (seconds each) would be most of a run's time.
    evaluation_jobs = [dg.define_asset_job(
        evaluation_job_name(name), selection=[fa.predictions, fa.metrics], executor_def=dg.in_process_executor,
        description=f"Predictions and metrics of {name} partitions: reuses finished runs (rule one), skips pairs "
                    "whose model cannot run here (skipped_reason on the partition); config force re-scores stored "
                    "outputs, regenerate calls the model again.")
        for name, fa in families.items()]
    publish_job = dg.define_asset_job(
        "publish", selection=["published_warehouse"],
        description="Publish every finished result.json as a new warehouse version (also automatic on new results).")
    return [inputs_job, *evaluation_jobs, publish_job]


def resolved_jobs(built: Built, resources: dict) -> dict[str, dg.JobDefinition]:
    """The named jobs over ``built``'s assets, resolved once (name -> JobDefinition), for launchers
    that run them in-process: ``medbench materialize``, and ``evaluate_all`` outside a code location."""
    defs = dg.Definitions(assets=built.assets, asset_checks=built.checks, jobs=named_jobs(built.families),
                          resources=resources, executor=dg.in_process_executor)
    return {job.name: job for job in defs.resolve_all_job_defs()}
