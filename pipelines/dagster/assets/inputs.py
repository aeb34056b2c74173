"""Assets holding the dataset snapshots and the task instances built from them, one snapshot asset
per registered dataset (``<dataset>_snapshot``) and one instances asset per registered task family
(named by its ``instances_asset``), made by the factories below.

Thin wrappers over ``pipelines.engine.inputs``; the checks are the family's instance checks (row
counts as the spec says, no subject in two splits, a sane prevalence, ...), over every task
version of the family.
"""


import dagster as dg

from pipelines.engine import inputs
from pipelines.dagster.resources import MedbenchResource
from pipelines.tasks.base import TaskFamily


def snapshot_asset_name(dataset_slug: str) -> str:
    return f"{dataset_slug.replace('-', '_')}_snapshot"


def snapshot_asset(dataset_slug: str) -> dg.AssetsDefinition:
    @dg.asset(name=snapshot_asset_name(dataset_slug), group_name="snapshots", kinds={"parquet"},
              description=f"The {dataset_slug} dataset (its real source, a mirror, or the demo data) as a "
                          "content-addressed snapshot.")
    def _snapshot(context: dg.AssetExecutionContext, medbench: MedbenchResource) -> dg.MaterializeResult:
        m = inputs.materialise_snapshot(medbench.specs(), medbench.data(), dataset_slug, context.log.info)
        return dg.MaterializeResult(metadata={"snapshot_id": m.snapshot_id, "rows": m.rows, "path": str(m.path),
                                              **{k: str(v) for k, v in m.details.items()}})

    return _snapshot


def instances_asset(fam: TaskFamily) -> dg.AssetsDefinition:
    name = fam.instances_asset

    @dg.asset(
        name=name, group_name="instances", kinds={"parquet"}, deps=[snapshot_asset_name(fam.dataset)],
        check_specs=[dg.AssetCheckSpec(check, asset=name) for check in fam.instance_check_names],
        description=f"Instances ({fam.instances_file}) of every {fam.name} task version.",
    )
    def _instances(context: dg.AssetExecutionContext, medbench: MedbenchResource) -> dg.MaterializeResult:
        specs, data = medbench.specs(), medbench.data()
        meta: dict = {}
        passed = {check: True for check in fam.instance_check_names}
        checks_meta: dict[str, dict] = {check: {} for check in fam.instance_check_names}
        for task in sorted((t for t in specs.tasks.values() if t.family == fam.name), key=lambda t: t.ref):
            built, outcomes = inputs.materialise_instances(specs, data, task.ref, context.log.info)
            meta[f"{task.ref} instances"] = built.rows
            meta.update({f"{task.ref} {k}": str(v) for k, v in built.details.items()})
            for o in outcomes:
                passed[o.name] = passed.get(o.name, True) and o.passed
                checks_meta.setdefault(o.name, {}).update(o.metadata)
                meta.update(o.metadata)
        return dg.MaterializeResult(
            metadata=meta,
            check_results=[dg.AssetCheckResult(check_name=check, passed=passed[check], metadata=checks_meta[check])
                           for check in fam.instance_check_names],
        )

    return _instances
