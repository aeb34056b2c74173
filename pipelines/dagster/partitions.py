"""Partitions of the evaluation assets: one dynamic partitions definition per task family, one key
per valid (task version, model) pair of that family, ``<task>@<version>|<model slug>``.

Per family, not one shared definition: a family's predictions and metrics assets then carry only
their own family's keys (no asset shows another family's pairs as missing partitions).
Keys come from the model specs (each lists its tasks), never from a hand-typed list and never
from a cross product. ``partition_changes`` is the one diff; the sensor turns it into
``SensorResult`` requests, the CLI applies it directly (``sync_evaluation_partitions``).
"""

from __future__ import annotations

import dagster as dg

from pipelines.dagster import engine_calls as engine
from pipelines.dagster.engine_calls import Specs


# Partitions definitions no asset uses any more, emptied by the same sync: "evaluations" was the one
# definition shared by all families before the assets were made per family.
RETIRED = ("evaluations",)


def asset_prefix(family_name: str) -> str:
    """A family's name as Dagster names allow it (letters, digits, underscores)."""
    return family_name.replace("-", "_").replace(".", "_")


def evaluation_job_name(family_name: str) -> str:
    """The named job of a family's predictions and metrics (the UI's and the CLI's runs alike)."""
    return f"evaluate_{asset_prefix(family_name)}"


def predictions_asset_name(family) -> str:
    """A family's predictions asset (and its op, in run config); ``metrics_asset_name`` likewise."""
    return f"{asset_prefix(family.name)}_predictions"


def metrics_asset_name(family) -> str:
    return f"{asset_prefix(family.name)}_metrics"


def partitions_name(family_name: str) -> str:
    return f"{asset_prefix(family_name)}_evaluations"


def partitions_def(family_name: str) -> dg.DynamicPartitionsDefinition:
    return dg.DynamicPartitionsDefinition(name=partitions_name(family_name))


def family_keys(specs: Specs) -> dict[str, list[str]]:
    """Partition keys by partitions definition name, for every registered family (empty lists too)."""
    keys: dict[str, list[str]] = {partitions_name(f): [] for f in engine.families(specs)}
    for task, model in specs.evaluations():
        keys[partitions_name(engine.family_of(task))].append(engine.partition_key(task.ref, model.slug))
    return keys


def evaluation_keys(specs: Specs) -> list[str]:
    """Every family's keys, flat (what the CLI may select)."""
    return [k for keys in family_keys(specs).values() for k in keys]


def partition_changes(instance: dg.DagsterInstance,
                      specs: Specs) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(to add, to delete) by partitions definition name; only non-empty lists."""
    added, removed = {}, {}
    for name, wanted in {**dict.fromkeys(RETIRED, []), **family_keys(specs)}.items():
        existing = set(instance.get_dynamic_partitions(name))
        if new := [k for k in wanted if k not in existing]:
            added[name] = new
        if gone := sorted(existing - set(wanted)):
            removed[name] = gone
    return added, removed


def partition_requests(instance: dg.DagsterInstance, specs: Specs) -> list:
    """The changes as the requests a sensor returns (Dagster applies them and records them)."""
    added, removed = partition_changes(instance, specs)
    return ([dg.AddDynamicPartitionsRequest(name, keys) for name, keys in added.items()]
            + [dg.DeleteDynamicPartitionsRequest(name, keys) for name, keys in removed.items()])


def sync_evaluation_partitions(instance: dg.DagsterInstance,
                               specs: Specs) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The CLI's path (no sensor runs in-process): apply the changes to the instance now."""
    added, removed = partition_changes(instance, specs)
    for name, keys in added.items():
        instance.add_dynamic_partitions(name, keys)
    for name, keys in removed.items():
        for key in keys:
            instance.delete_dynamic_partition(name, key)
    return added, removed
