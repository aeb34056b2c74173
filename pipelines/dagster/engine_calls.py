"""Every call the Dagster layer makes into the engine and the task families, in one module.

Why: the assets stay thin and name no task. Every module of ``pipelines/dagster`` reaches the engine
(``pipelines/engine``) and the task families (``pipelines/tasks``, through the specs' plug-ins) only
through the names below, so the Dagster layer's whole dependency on the engine can be read in one
place; import-linter's contract "the Dagster layer reaches the engine only through engine_calls"
keeps it so (docs/concepts.md, "Inside pipelines"). The engine's heavier modules (publishing,
withdrawing, the submissions store's review) are imported when called, as they were by their callers,
so a process that only loads the code location does not import DuckDB or SQLAlchemy for them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from pipelines.engine import evaluate as _evaluate
from pipelines.engine import inputs as _inputs
from pipelines.engine.locks import LockTimeout, exclusive, written_since
from pipelines.engine.snapshots import NotMaterialized, current_snapshot
from pipelines.engine.specs import SpecError, Specs, TaskSpec, load_model_spec, spec_hash
from pipelines.engine.specs_cache import cached_specs
from medbench.outcomes import CheckOutcome, Instances
from medbench.layout import DataDir

Log = Callable[[str], None]

# Re-exported as they are: their shapes are already the contract's.
Evaluation = _evaluate.Evaluation
resolve_evaluation = _evaluate.resolve_evaluation
existing_result = _evaluate.existing_result
make_predictions = _evaluate.make_predictions
compute_metrics = _evaluate.compute_metrics
partition_key = _evaluate.partition_key
split_partition_key = _evaluate.split_partition_key
Materialized = _inputs.Materialized
__all__ = ["LockTimeout", "NotMaterialized", "SpecError", "Specs", "TaskSpec", "cached_specs", "current_snapshot",
           "exclusive", "load_model_spec", "written_since"]


# --------------------------------------------------------------------------- imported when called


def publish_results(specs: Specs, data: DataDir, log: Log, key=None) -> tuple[str, bool, int]:
    """Publish every finished result (``pipelines.engine.release.release``)."""
    from pipelines.engine.release import publish_results as _release

    return _release(specs, data, log, key)


def readable_results(data: DataDir) -> list:
    """The finished results whose result.json decodes (``pipelines.engine.release.readable_results``)."""
    from pipelines.engine.release import readable_results as _readable_results

    return _readable_results(data)


def withdraw_and_publish(specs: Specs, data: DataDir, run_id: str, reason: str, log: Log):
    """Record a withdrawal, then publish (``pipelines.engine.withdraw.withdraw_and_publish``)."""
    from pipelines.engine.withdraw import withdraw_and_publish as _withdraw_and_publish

    return _withdraw_and_publish(specs, data, run_id, reason, log)


def review(store, submission_id: str, decision: str, reason: str):
    """An operator's decision on a submission (``pipelines.engine.submission_review.review``)."""
    from pipelines.engine.submission_review import review as _review

    return _review(store, submission_id, decision, reason)


def write_submitted_spec(sub, data: DataDir, plugins) -> Path:
    """Write a submission's spec and validate it (``pipelines.engine.submitted_specs.write_submitted_spec``)."""
    from pipelines.engine.submitted_specs import write_submitted_spec as _write_submitted_spec

    return _write_submitted_spec(sub, data, plugins)


# --------------------------------------------------------------------------- families


def families(specs: Specs) -> dict:
    """The task families of the specs' plug-ins, by name."""
    return specs.plugins.families.as_dict()


def family_of(task: TaskSpec) -> str:
    """The task spec's ``family``."""
    return task.family


def tasks_of(specs: Specs, family_name: str) -> list[TaskSpec]:
    """The task versions of one family, in a stable order."""
    return sorted((t for t in specs.tasks.values() if t.family == family_name), key=lambda t: t.ref)


def family_spec_hash(specs: Specs, family_name: str) -> str:
    """One hash over the family's task spec hashes: the assets' ``code_version``, so that editing a
    task spec marks the family's assets stale in the UI (and nothing else)."""
    parts = [f"{t.ref}:{spec_hash(t)}" for t in tasks_of(specs, family_name)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def dataset_spec_hash(specs: Specs, dataset_slug: str) -> str:
    """The snapshot asset's ``code_version``: its dataset spec (source, revision, ...)."""
    return spec_hash(specs.datasets[dataset_slug])[:16]


def check_names(asset: str, family) -> list[tuple[str, str]]:
    """(name, description) of the checks the family runs on its ``asset`` ("instances" | "predictions").

    The assets declare their checks before anything runs, so the names are the family's static
    declaration (``instance_check_names`` / ``prediction_check_names``); the family computes the
    verdicts, and describes each check in ``check_descriptions``."""
    names = family.instance_check_names if asset == "instances" else family.prediction_check_names
    descriptions = family.check_descriptions
    return [(name, descriptions.get(name, name.replace("_", " "))) for name in names]


# --------------------------------------------------------------------------- inputs


def materialize_snapshot(specs: Specs, data: DataDir, dataset_slug: str, log: Log) -> Materialized:
    """Build (or find, content-addressed) the dataset's snapshot and make it current."""
    return _inputs.materialize_snapshot(specs, data, dataset_slug, log)


def instances_path(specs: Specs, data: DataDir, task_ref: str) -> Path:
    """The instances file of a task version under the current snapshot of its dataset."""
    task = specs.task(task_ref)
    return _inputs.task_instances_path(data, task, specs.family_of(task))


def materialize_instances(specs: Specs, data: DataDir, task_ref: str,
                          log: Log) -> tuple[Instances, list[CheckOutcome]]:
    """Build a task version's instances from its dataset's current snapshot, with the checks' verdicts."""
    return _inputs.materialize_instances(specs, data, task_ref, log)


def instance_checks(specs: Specs, data: DataDir, task_ref: str) -> list[CheckOutcome]:
    """The family's checks on a task version's stored instances file (reads it; rebuilds nothing),
    so that a check re-run alone from the UI judges what is on disk."""
    task = specs.task(task_ref)
    return specs.family_of(task).instance_checks(task, instances_path(specs, data, task.ref))


# --------------------------------------------------------------------------- evaluations


def prediction_checks(ev: Evaluation, data: DataDir) -> list[CheckOutcome]:
    """The family's checks on one evaluation's stored predictions."""
    return _evaluate.prediction_checks(ev, data)


def discard_generation(ev: Evaluation, data: DataDir) -> list[Path]:
    """``regenerate``: move aside the stored raw outputs of the generation key this run recorded
    (``run.json``), so the next predict calls the model again; returns where they went. Moved, not
    deleted: raw outputs may have cost money. Nothing recorded, nothing moved."""
    import datetime as dt

    import msgspec

    info_path = data.run_dir(ev.run_id) / "run.json"
    if not info_path.exists():
        return []
    key = msgspec.json.decode(info_path.read_bytes()).get("generation_key")
    stored = data.generations(key) if key else None
    if stored is None or not stored.exists():
        return []
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    moved = stored.with_name(f"{stored.name}.discarded-{stamp}")
    stored.rename(moved)
    return [moved]
