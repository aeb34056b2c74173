"""Asset factories for the inputs: one snapshot asset per dataset, one instances asset per task
family, each with its own checks.

Why factories: the families come from the specs' plug-ins, so adding a family adds its assets here
without editing this module, and lineage is exact (a family's instances depend only on its own
dataset's snapshot). Staleness in the UI means something: a snapshot's ``DataVersion`` is its
content-addressed snapshot id and its ``code_version`` the dataset spec's hash; an instances
asset's ``DataVersion`` is that snapshot id plus the family's task spec hash, its
``code_version`` that hash, so a new snapshot or an edited task spec marks exactly the affected
assets stale.

Its file name is shared on purpose: the Dagster side of the engine module of the same name.
"""


import dagster as dg

from pipelines.dagster import engine_calls as engine
from pipelines.dagster.partitions import asset_prefix
from pipelines.dagster.resources import MedbenchResource
from pipelines.dagster.engine_calls import Specs, current_snapshot

from .checks import merge, outcome_check
from .metadata import typed


def snapshot_asset_name(dataset_slug: str) -> str:
    return f"{asset_prefix(dataset_slug)}_snapshot"


def instances_asset_name(family) -> str:
    """Named for what it holds: ``<family>_<instances file stem>`` (e.g. ``..._items``, ``..._windows``)."""
    stem = family.instances_file.rsplit(".", 1)[0]
    return f"{asset_prefix(family.name)}_{stem}"


def snapshot_asset(dataset_slug: str, specs: Specs) -> dg.AssetsDefinition:
    dataset = specs.datasets[dataset_slug]

    @dg.asset(name=snapshot_asset_name(dataset_slug), group_name="snapshots", kinds={"parquet"},
              code_version=engine.dataset_spec_hash(specs, dataset_slug),
              description=f"{dataset.name} as a content-addressed Parquet snapshot (the demo data's in demo "
                          "data directories); its data version is the snapshot id that enters every run id.")
    def snapshot(context: dg.AssetExecutionContext, medbench: MedbenchResource) -> dg.MaterializeResult:
        m = engine.materialize_snapshot(medbench.specs(), medbench.data(), dataset_slug, context.log.info)
        return dg.MaterializeResult(
            data_version=dg.DataVersion(m.snapshot_id),
            metadata=typed({"snapshot_id": m.snapshot_id, "rows": m.rows, "path": m.path, **m.details}))

    return snapshot


def instances_asset(family, specs: Specs) -> tuple[dg.AssetsDefinition, list[dg.AssetChecksDefinition]]:
    """The family's instances asset (every task version of the family) and its checks."""
    family_hash = engine.family_spec_hash(specs, family.name)
    refs = [t.ref for t in engine.tasks_of(specs, family.name)]

    @dg.asset(name=instances_asset_name(family), group_name="instances", kinds={"parquet"},
              deps=[snapshot_asset_name(family.dataset)], code_version=family_hash,
              description=f"Instances of the {family.name} task versions ({', '.join(refs) or 'none in the specs'}), "
                          f"built from the current {family.dataset} snapshot.")
    def instances(context: dg.AssetExecutionContext, medbench: MedbenchResource) -> dg.MaterializeResult:
        specs_now, data = medbench.specs(), medbench.data()
        meta: dict = {}
        for task in engine.tasks_of(specs_now, family.name):
            # The verdicts are reported by the @asset_check functions below, which re-read the file.
            built, _verdicts = engine.materialize_instances(specs_now, data, task.ref, context.log.info)
            meta.update({f"{task.ref} rows": built.rows, f"{task.ref} path": built.path,
                         **{f"{task.ref} {k}": v for k, v in built.details.items()}})
        snapshot_id = current_snapshot(data, family.dataset).snapshot_id
        meta["snapshot_id"] = snapshot_id
        return dg.MaterializeResult(data_version=dg.DataVersion(f"{snapshot_id}+{family_hash}"), metadata=typed(meta))

    def outcomes(context: dg.AssetCheckExecutionContext, medbench: MedbenchResource):
        specs_now, data = medbench.specs(), medbench.data()
        return merge({t.ref: engine.instance_checks(specs_now, data, t.ref)
                      for t in engine.tasks_of(specs_now, family.name)})

    checks = [outcome_check(instances, name, description, outcomes)
              for name, description in engine.check_names("instances", family)]
    return instances, checks
