"""Each result against its task's baseline model: rows of the ``baseline_comparisons`` table.

A comparison depends on two runs, so it cannot live in either result.json (nor in a run id): it is
computed when a warehouse version is published, from the finished runs' predictions, and handed
to ``warehouse.publish`` as plain rows (the warehouse imports nothing from pipelines). Which model
a task is compared with is the task's own business (its family's ``baseline_model(task)``, e.g.
the vitaldb-ioh spec's ``baseline_model`` key), so no task is named here. The baseline run is the
newest result of that model on the same task version (the one that supersedes the others); each
other result of the task, superseded or not, gets the paired AUROC difference to it on the shared
test windows, by the cluster bootstrap of ``/v1/compare`` with the task's bootstrap settings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow.parquet as pq

from pipelines.engine.specs import Specs
from pipelines.stats.paired_auroc import METHOD, paired_auroc_difference
from warehouse.layout import DataDir
from warehouse.records import ResultRecord


def _columns(data: DataDir, run_id: str) -> dict[str, np.ndarray] | None:
    path = data.predictions_path(run_id)
    if not path.exists():
        return None
    t = pq.read_table(path, columns=["instance_id", "score", "label", "subjectid"])
    order = np.argsort(t.column("instance_id").to_numpy().astype(str), kind="stable")
    return {name: t.column(name).to_numpy()[order] for name in ("instance_id", "score", "label", "subjectid")}


def baseline_comparison_rows(specs: Specs, data: DataDir, results: list[ResultRecord]) -> list[dict[str, Any]]:
    """One row per (result, its task's baseline run), the baseline's own result left out."""
    rows: list[dict[str, Any]] = []
    for ref, task in sorted(specs.tasks.items()):
        baseline_slug = specs.family_of(task).baseline_model(task)
        if not baseline_slug or task.kind != "score":
            continue
        runs = [r for r in results if r.task == ref]
        bases = [r for r in runs if r.model.slug == baseline_slug]
        if not bases:
            continue
        base = max(bases, key=lambda r: (r.created_at, r.run_id))
        b = _columns(data, base.run_id)
        if b is None:
            continue
        for r in sorted(runs, key=lambda r: r.run_id):
            if r.model.slug == baseline_slug:
                continue
            a = _columns(data, r.run_id)
            if a is None or not np.array_equal(a["instance_id"], b["instance_id"]) \
                    or not np.array_equal(a["label"], b["label"]):
                continue  # not the same test windows: no paired comparison
            d = paired_auroc_difference(a["score"], b["score"], a["label"], a["subjectid"],
                                        task.bootstrap.replicates, task.bootstrap.seed)
            if d is None:
                continue
            rows.append({
                "run_id": r.run_id, "baseline_run_id": base.run_id, "baseline_model": baseline_slug,
                "metric": "auroc", "difference": d.difference, "ci_low": d.ci_low, "ci_high": d.ci_high,
                "p_value": d.p_value, "method": METHOD, "replicates": task.bootstrap.replicates,
                "seed": task.bootstrap.seed, "dropped_replicates": d.dropped,
            })
    return rows
