"""Partitions of the evaluation assets: one per valid (task version, model) pair in the specs.

Partitions come from the model specs (each lists its tasks), never from a hand-typed list and
never from a cross product; ``sync_evaluation_partitions`` adds new pairs and drops removed ones.
"""

from __future__ import annotations

import dagster as dg

from pipelines.engine.evaluate import partition_key
from pipelines.engine.specs import Specs

EVALUATIONS = dg.DynamicPartitionsDefinition(name="evaluations")


def evaluation_keys(specs: Specs) -> list[str]:
    return [partition_key(task.ref, model.slug) for task, model in specs.evaluations()]


def sync_evaluation_partitions(instance: dg.DagsterInstance, specs: Specs) -> tuple[list[str], list[str]]:
    wanted = evaluation_keys(specs)
    existing = set(instance.get_dynamic_partitions(EVALUATIONS.name))
    added = [k for k in wanted if k not in existing]
    removed = sorted(existing - set(wanted))
    if added:
        instance.add_dynamic_partitions(EVALUATIONS.name, added)
    for key in removed:
        instance.delete_dynamic_partition(EVALUATIONS.name, key)
    return added, removed
