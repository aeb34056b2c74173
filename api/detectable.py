"""``detectable_difference`` of a task version (``/v1/tasks/{slug}``, the task page, the compare
page): the smallest difference in the primary metric a paired comparison at the task's n detects
with 80% power at alpha = 0.05, from the task's current results (``medbench.stats.detectable``;
docs/statistics.md, "Smallest detectable difference").

Computed from the predictions files of the current results, as ``/v1/compare`` reads them, once
per warehouse version and task (memoised with the version's bodies), over the current results
whose predictions file is present; null with fewer than two of them (no pair), or when the results
never disagree (a discordant-pair rate of 0 gives no figure).

Its file name is shared on purpose: the API's side of the computation of the same name (it reads
published rows; the numbers are computed in the pipeline).
"""

from __future__ import annotations

import os

import numpy as np

from api import schemas
from api.tables import Tables, TaskEntry
from medbench.kind import read_aligned
from medbench.kinds.score import cluster_values
from medbench.stats.detectable import (ALPHA, POWER, bootstrap_detectable, mcnemar_detectable,
                                        median_discordant_rate, median_pair_sd)
from medbench.stats.ranks import auroc_replicate_values
from medbench.layout import DataDir

_MISSING = "none"


def detectable_difference(data: DataDir, tables: Tables, task: TaskEntry) -> schemas.DetectableDifference | None:
    key = ("detectable", task.ref)
    cached = tables.bodies.get(key)
    if cached is None:
        cached = tables.bodies.put(key, _compute(data, tables, task) or _MISSING)
    return None if cached == _MISSING else cached


def _compute(data: DataDir, tables: Tables, task: TaskEntry) -> schemas.DetectableDifference | None:
    # the current results whose predictions file is in the data directory
    board = [p for p in tables.leaderboards.get(task.ref, ()) if os.path.exists(data.predictions_path(p.run_id))]
    paths = [data.predictions_path(p.run_id) for p in board]
    if len(paths) < 2:
        return None
    # the formula belongs to the primary metric: a paired proportion (McNemar) or a bootstrapped AUROC
    if task.primary_metric == "accuracy":
        aligned, _ = read_aligned(paths, ["correct"])
        correct = np.stack([np.asarray(a["correct"], dtype=bool) for a in aligned])
        n = correct.shape[1]
        psi = median_discordant_rate(correct)
        value = mcnemar_detectable(psi, n)
        basis = (f"exact McNemar test on {n} items; discordant-pair rate {psi:.3f} (the median over the "
                 f"{len(board) * (len(board) - 1) // 2} pairs of the {len(board)} current results); normal "
                 "approximation (Connor 1987) solved for the difference")
    elif task.primary_metric == "auroc":
        bootstrap = task.spec.get("bootstrap") or {}
        replicates, seed = int(bootstrap.get("replicates", 1000)), int(bootstrap.get("seed", 0))
        columns = ["score", "label", *([task.cluster_column] if task.cluster_column else [])]
        aligned, _ = read_aligned(paths, columns)
        scores = np.stack([np.asarray(a["score"], dtype=np.float64) for a in aligned])
        labels = np.asarray(aligned[0]["label"]).astype(bool)
        if labels.all() or not labels.any():
            return None
        values = auroc_replicate_values(scores, labels, cluster_values(aligned[0], task.cluster_column),
                                        replicates, seed)
        kept = values[np.isfinite(values).all(axis=1)]
        sd = median_pair_sd(kept)
        value = bootstrap_detectable(sd)
        basis = (f"(z0.975 + z0.8) x {sd:.4f}, the median over the {len(board) * (len(board) - 1) // 2} pairs of "
                 f"the {len(board)} current results of the paired cluster-bootstrap SD of their AUROC difference "
                 f"({len(kept)} kept of {replicates} replicates, {len(labels)} windows)")
    else:
        return None
    if not np.isfinite(value):
        return None
    return schemas.DetectableDifference(metric=task.primary_metric, value=float(value), power=POWER, alpha=ALPHA,
                                        basis=basis)
