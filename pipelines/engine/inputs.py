"""Dataset snapshots and task instances, as plain functions the Dagster assets call.

``materialize_snapshot`` asks the dataset (of the specs' plug-ins) for a content-addressed
snapshot in the data directory (from its real source, a local mirror, or generated demo files in
the real formats) and moves the dataset's ``CURRENT`` pointer; ``materialize_instances`` asks the
task's family (likewise) to build one task version's instances from that
snapshot and returns the family's instance checks. Rerunning on unchanged input is a no-op that
keeps every id stable. Nothing here names a dataset or a task.

Its file name is shared on purpose: the engine's step of that name; the Dagster assets, the official
tier and the CLI have their own module for the same step, each calling this one.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from medbench import old_spellings
from medbench.outcomes import CheckOutcome, Instances, Materialized
from medbench.protocols import Dataset, TaskFamily
from pipelines.engine.snapshots import current_snapshot, instances_location, set_current_snapshot
from pipelines.engine.specs import SpecError, Specs, TaskSpec
from medbench.layout import DataDir

Log = Callable[[str], None]

__all__ = ["Materialized", "materialize_snapshot", "snapshot_options", "materialize_instances",
           "instances_path", "task_instances_path"]


# --------------------------------------------------------------------------- snapshots


def snapshot_options(specs: Specs, dataset_slug: str) -> dict[str, Any]:
    """What the dataset's snapshot must honour: the ``snapshot_options`` of the latest version of
    every task that reads it (they must agree)."""
    latest: dict[str, TaskSpec] = {}
    for task in specs.tasks.values():
        if task.dataset == dataset_slug and (task.slug not in latest or task.version > latest[task.slug].version):
            latest[task.slug] = task
    options: dict[str, Any] = {}
    for task in sorted(latest.values(), key=lambda t: t.ref):
        for key, value in specs.family_of(task).snapshot_options(task).items():
            if key in options and options[key] != value:
                raise SpecError(f"tasks reading dataset {dataset_slug!r} disagree on its snapshot's {key!r} "
                                f"({options[key]!r} and {value!r}, from {task.ref})")
            options[key] = value
    return options


def materialize_snapshot(specs: Specs, data: DataDir, dataset_slug: str, log: Log) -> Materialized:
    """Make the dataset's snapshot in ``data`` and point its ``CURRENT`` at it."""
    spec = specs.datasets[dataset_slug]
    made = old_spellings.call(specs.plugins.datasets.get(dataset_slug), Dataset, "materialize", spec, data,
                              snapshot_options(specs, dataset_slug), log)
    set_current_snapshot(data, dataset_slug, Path(made.path))
    return made


# --------------------------------------------------------------------------- instances


def task_instances_path(data: DataDir, task: TaskSpec, family: TaskFamily) -> Path:
    """Where the instances of ``task`` (of ``family``) built from its dataset's current snapshot live."""
    snap = current_snapshot(data, task.dataset)
    return instances_location(data, task.ref, snap.snapshot_id, family.instances_file)


def instances_path(data: DataDir, task_ref: str, specs: Specs) -> Path:
    """``task_instances_path`` by task ref (``slug@version`` or ``slug``)."""
    task = specs.task(task_ref)
    return task_instances_path(data, task, specs.family_of(task))


def materialize_instances(specs: Specs, data: DataDir, task_ref: str, log: Log) -> tuple[Instances, list[CheckOutcome]]:
    """Build the instances of one task version from its dataset's current snapshot; run its checks."""
    task = specs.task(task_ref)
    fam = specs.family_of(task)
    snap = current_snapshot(data, task.dataset)
    out = instances_location(data, task.ref, snap.snapshot_id, fam.instances_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    built = replace(fam.build_instances(task, snap.path, out, log), snapshot_id=snap.snapshot_id)
    return built, fam.instance_checks(task, built.path)
