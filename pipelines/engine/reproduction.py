"""Checking that a re-materialized result is the published one: versions, predictions, metrics.

``medbench reproduce`` re-runs a published evaluation from scratch; this module says, in words, what
differs. Versions first (a different task spec, model spec or dataset snapshot is a different
experiment, so the run would not even be the same run id), then the predictions file (its sha256,
and row by row on ``instance_id`` so that a difference is shown, not just detected), then every
metric with its interval, compared exactly: the pipeline is seeded end to end, so "close" is a
difference worth reporting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pipelines.engine.specs import Specs, spec_hash

MAX_EXAMPLES = 5


def version_mismatches(result: dict[str, Any], specs: Specs) -> list[str]:
    """Why this checkout's specs cannot reproduce ``result`` (an API Result), or [] when they can."""
    problems = []
    try:
        task = specs.task(result["task"])
    except KeyError:
        return [f"task {result['task']}: this checkout has no spec for it (specs/tasks/)"]
    try:
        model = specs.model(result["model"]["slug"])
    except KeyError:
        return [f"model {result['model']['slug']}: this checkout has no spec for it (specs/models/)"]
    recorded = result["versions"]
    local_task, local_model = spec_hash(task), spec_hash(model)
    if recorded["task_spec_hash"] != local_task:
        problems.append(f"task spec hash of {task.ref}: the result records {recorded['task_spec_hash']}, "
                        f"this checkout's specs/tasks/{task.slug}/{task.version}.toml gives {local_task}")
    if recorded["model_spec_hash"] != local_model:
        problems.append(f"model spec hash of {model.slug}: the result records {recorded['model_spec_hash']}, "
                        f"this checkout's specs/models/{model.slug}.toml gives {local_model}")
    if result["model"].get("revision") not in (None, model.revision):
        problems.append(f"model revision: the result records {result['model']['revision']}, the spec says {model.revision}")
    return problems


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    return x == y


@dataclass
class PredictionsDiff:
    rows_original: int
    rows_reproduced: int
    missing: list[str] = field(default_factory=list)  # instance ids only in the original
    extra: list[str] = field(default_factory=list)  # ... only in the reproduction
    columns_original_only: list[str] = field(default_factory=list)
    columns_reproduced_only: list[str] = field(default_factory=list)
    differing_rows: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not (self.missing or self.extra or self.columns_original_only or self.columns_reproduced_only
                    or self.differing_rows or self.rows_original != self.rows_reproduced)


def compare_predictions(original: pa.Table, reproduced: pa.Table) -> PredictionsDiff:
    """Row-by-row comparison on ``instance_id`` over the columns both tables have."""
    diff = PredictionsDiff(rows_original=original.num_rows, rows_reproduced=reproduced.num_rows)
    cols_a, cols_b = set(original.column_names), set(reproduced.column_names)
    diff.columns_original_only = sorted(cols_a - cols_b)
    diff.columns_reproduced_only = sorted(cols_b - cols_a)
    shared_cols = [c for c in original.column_names if c in cols_b and c != "instance_id"]
    rows_a = {r["instance_id"]: r for r in original.select(["instance_id", *shared_cols]).to_pylist()}
    rows_b = {r["instance_id"]: r for r in reproduced.select(["instance_id", *shared_cols]).to_pylist()}
    diff.missing = sorted(set(rows_a) - set(rows_b))
    diff.extra = sorted(set(rows_b) - set(rows_a))
    for iid in sorted(set(rows_a) & set(rows_b)):
        changed = [c for c in shared_cols if not _same(rows_a[iid][c], rows_b[iid][c])]
        if changed:
            diff.differing_rows += 1
            if len(diff.examples) < MAX_EXAMPLES:
                shown = ", ".join(f"{c}: {rows_a[iid][c]!r} -> {rows_b[iid][c]!r}" for c in changed)
                diff.examples.append(f"{iid}: {shown}")
    return diff


def metric_differences(recorded: dict[str, Any], reproduced: dict[str, Any]) -> list[str]:
    """Every metric value and bound, ``n`` and ``parse_rate``, compared exactly."""
    out = []
    for key in ("n", "parse_rate"):
        if not _same(recorded.get(key), reproduced.get(key)):
            out.append(f"{key}: published {recorded.get(key)!r}, reproduced {reproduced.get(key)!r}")
    published = {m["name"]: m for m in recorded["metrics"]}
    again = {m["name"]: m for m in reproduced["metrics"]}
    for name in sorted(set(published) | set(again)):
        if name not in again or name not in published:
            out.append(f"{name}: only in the {'published' if name in published else 'reproduced'} result")
            continue
        for part in ("value", "ci_low", "ci_high"):
            x, y = float(published[name][part]), float(again[name][part])
            if not _same(x, y):
                out.append(f"{name} {part}: published {x!r}, reproduced {y!r}")
    return out
