"""Every call the Dagster layer makes into the engine and the task families, in one module.

Why: the engine (``pipelines/engine``) and the task families (``pipelines/tasks``) are being
rewritten behind a fixed contract (``pipelines.tasks.registry.families()``, ``TaskSpec.family``,
``pipelines.engine.inputs.materialise_snapshot/materialise_instances/instances_path``,
``pipelines.engine.evaluate.plan/existing_result/make_predictions/prediction_checks/
compute_metrics``). The assets code against the functions below, which have that contract's
shapes; until the rewrite lands they adapt today's per-dataset functions. After it lands only this
module changes: each function becomes a one-line call (the ``TEMPORARY`` blocks go away).
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipelines.engine import evaluate as _evaluate
from pipelines.engine import inputs as _inputs
from pipelines.engine.specs import Specs, TaskSpec, spec_hash
from pipelines.tasks.base import CheckOutcome, Instances
from warehouse.layout import DataDir

Log = Callable[[str], None]

# Re-exported as they are: their shapes are already the contract's.
Evaluation = _evaluate.Evaluation
plan = _evaluate.plan
existing_result = _evaluate.existing_result
make_predictions = _evaluate.make_predictions
compute_metrics = _evaluate.compute_metrics
partition_key = _evaluate.partition_key
split_partition_key = _evaluate.split_partition_key
Materialised = _inputs.Materialised


# --------------------------------------------------------------------------- families


@dataclass(frozen=True)
class _StandInFamily:
    """TEMPORARY: the declaration part of a TaskFamily, until pipelines/tasks/*/family.py exist."""

    name: str
    kind: str
    dataset: str
    instances_file: str


# TEMPORARY: True once the engine rewrite (the built-in families' modules) is in this checkout.
_MERGED = importlib.util.find_spec("pipelines.tasks.clinicalqa.family") is not None

# TEMPORARY registry wiring (the built-in families as the registry will declare them).
_STAND_IN = (_StandInFamily("clinicalqa", "choice", "clinicalqa", "items.parquet"),
             _StandInFamily("vitaldb-ioh", "score", "vitaldb", "windows.parquet"))


def families() -> dict:
    """The registered task families by name (``pipelines.tasks.registry.families()``)."""
    if _MERGED:
        from pipelines.tasks.registry import families as registered

        return registered()
    return {f.name: f for f in _STAND_IN}  # TEMPORARY


def family_of(task: TaskSpec) -> str:
    """The task spec's ``family`` (TEMPORARY fallback: the family that reads the task's dataset)."""
    name = getattr(task, "family", None)
    if name:
        return name
    return next(f.name for f in families().values() if f.dataset == task.dataset)


def tasks_of(specs: Specs, family_name: str) -> list[TaskSpec]:
    """The task versions of one family, in a stable order."""
    return sorted((t for t in specs.tasks.values() if family_of(t) == family_name), key=lambda t: t.ref)


def family_spec_hash(specs: Specs, family_name: str) -> str:
    """One hash over the family's task spec hashes: the assets' ``code_version``, so that editing a
    task spec marks the family's assets stale in the UI (and nothing else)."""
    parts = [f"{t.ref}:{spec_hash(t)}" for t in tasks_of(specs, family_name)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def dataset_spec_hash(specs: Specs, dataset_slug: str) -> str:
    """The snapshot asset's ``code_version``: its dataset spec (source, revision, ...)."""
    return spec_hash(specs.datasets[dataset_slug])[:16]


# Check names and descriptions, by asset and family kind. The assets declare their checks before
# anything runs, so the names must be known statically; the family computes the verdicts.
# TEMPORARY: after the merge these come from the family if it declares them.
CHECKS: dict[str, dict[str, list[tuple[str, str]]]] = {
    "instances": {
        "choice": [("row_count_matches_spec", "The instances file has as many items as the task spec's n_items.")],
        "score": [
            ("subjects_in_one_split", ("No subject has windows in two splits (train/validation/test are "
                                       "disjoint by subject).")),
            ("label_prevalence_in_range", "The positive-label prevalence over all windows is in a sane range."),
            ("both_classes_in_test", "The test split holds both positive and negative windows (AUROC is defined)."),
        ],
    },
    "predictions": {
        "choice": [("every_instance_predicted_once", ("Every instance id the task defines appears in the "
                                                      "predictions exactly once, and no other id does."))],
        "score": [
            ("every_instance_predicted_once", ("Every test-split instance id appears in the predictions "
                                               "exactly once, and no other id does.")),
            ("scores_finite", "Every predicted score is a finite number (no NaN or infinity)."),
        ],
    },
}


def check_names(asset: str, family) -> list[tuple[str, str]]:
    """(name, description) of the checks the family runs on its ``asset`` ("instances" | "predictions")."""
    return CHECKS[asset][family.kind]


# --------------------------------------------------------------------------- inputs


def materialise_snapshot(specs: Specs, data: DataDir, dataset_slug: str, log: Log) -> Materialised:
    """Build (or find, content-addressed) the dataset's snapshot and make it current."""
    if _MERGED:
        return _inputs.materialise_snapshot(specs, data, dataset_slug, log)
    # TEMPORARY: today's per-dataset functions are named materialise_<dataset>_snapshot.
    return getattr(_inputs, f"materialise_{dataset_slug}_snapshot")(specs, data, log)


def instances_path(specs: Specs, data: DataDir, task_ref: str) -> Path:
    """The instances file of a task version under the current snapshot of its dataset."""
    task = specs.task(task_ref)
    if _MERGED:
        return _inputs.instances_path(data, task.ref)
    # TEMPORARY
    if task.kind == "choice":
        return _inputs.clinicalqa_items_path(data, task.ref)
    return _inputs.ioh_windows_path(data, task.ref)


def materialise_instances(specs: Specs, data: DataDir, task_ref: str,
                          log: Log) -> tuple[Instances, list[CheckOutcome]]:
    """Build a task version's instances from its dataset's current snapshot, with the checks' verdicts."""
    if _MERGED:
        return _inputs.materialise_instances(specs, data, task_ref, log)
    # TEMPORARY: today's per-family functions.
    task = specs.task(task_ref)
    if task.kind == "choice":
        m = _inputs.materialise_clinicalqa_items(specs, data, task.ref, log)
    else:
        m = _inputs.materialise_ioh_windows(specs, data, task.ref, log)
    built = Instances(path=m.path, rows=m.rows, details=m.details)
    return built, instance_checks(specs, data, task.ref)


def instance_checks(specs: Specs, data: DataDir, task_ref: str) -> list[CheckOutcome]:
    """The family's checks on a task version's stored instances file (reads it; rebuilds nothing),
    so that a check re-run alone from the UI judges what is on disk."""
    task = specs.task(task_ref)
    path = instances_path(specs, data, task.ref)
    if _MERGED:
        return families()[family_of(task)].instance_checks(task, path)
    return _stand_in_instance_checks(task, path)  # TEMPORARY


# --------------------------------------------------------------------------- evaluations


def prediction_checks(ev: Evaluation, data: DataDir) -> list[CheckOutcome]:
    """The family's checks on one evaluation's stored predictions."""
    if _MERGED:
        return _evaluate.prediction_checks(ev, data)
    return _stand_in_prediction_checks(ev, data)  # TEMPORARY


# --------------------------------------------------------------------------- TEMPORARY check bodies
# Today's checks, moved here unchanged from the assets; the families own them after the merge.

PREVALENCE_RANGE = (0.005, 0.6)


def _stand_in_instance_checks(task: TaskSpec, path: Path) -> list[CheckOutcome]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if task.kind == "choice":
        assert task.choice is not None
        rows = pq.read_metadata(path).num_rows
        return [CheckOutcome("row_count_matches_spec", rows == task.choice.n_items,
                             metadata={"items": rows, "expected": task.choice.n_items})]
    table = pq.read_table(path, columns=["subjectid", "split", "label"])
    per_subject = table.group_by(["subjectid"]).aggregate([("split", "count_distinct")])
    most_splits = max(per_subject.column("split_count_distinct").to_pylist(), default=1)
    labels = table.column("label").to_numpy()
    prevalence = float(labels.mean()) if len(labels) else 0.0
    test = table.filter(pc.equal(table.column("split"), "test")).column("label").to_numpy()
    positives = int(test.sum()) if len(test) else 0
    return [
        CheckOutcome("subjects_in_one_split", most_splits == 1,
                     metadata={"subjects": per_subject.num_rows, "most_splits_of_a_subject": most_splits}),
        CheckOutcome("label_prevalence_in_range", PREVALENCE_RANGE[0] <= prevalence <= PREVALENCE_RANGE[1],
                     metadata={"prevalence": round(prevalence, 4), "min": PREVALENCE_RANGE[0],
                               "max": PREVALENCE_RANGE[1]}),
        CheckOutcome("both_classes_in_test", bool(len(test)) and 0 < positives < len(test),
                     metadata={"test_windows": len(test), "test_positives": positives}),
    ]


def _stand_in_prediction_checks(ev: Evaluation, data: DataDir) -> list[CheckOutcome]:
    import numpy as np
    import pyarrow.parquet as pq

    table = pq.read_table(data.predictions_path(ev.run_id))
    ids = table.column("instance_id").to_pylist()
    if ev.task.kind == "choice":
        items = pq.read_table(_inputs.clinicalqa_items_path(data, ev.task.ref), columns=["instance_id"])
        expected = set(items.column("instance_id").to_pylist())
    else:
        windows = pq.read_table(_inputs.ioh_windows_path(data, ev.task.ref), columns=["instance_id", "split"])
        expected = {i for i, s in zip(windows.column("instance_id").to_pylist(), windows.column("split").to_pylist())
                    if s == "test"}
    out = [CheckOutcome("every_instance_predicted_once", len(ids) == len(set(ids)) and set(ids) == expected,
                        metadata={"predicted": len(ids), "distinct": len(set(ids)), "expected": len(expected)})]
    if ev.task.kind == "score":
        scores = table.column("score").to_numpy(zero_copy_only=False).astype(float)
        bad = int((~np.isfinite(scores)).sum())
        out.append(CheckOutcome("scores_finite", bad == 0, metadata={"scores": len(scores), "not_finite": bad}))
    return out
