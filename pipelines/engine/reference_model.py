"""Each result against its task's reference model: rows of the ``baseline_comparisons`` table.

Words: the *reference model* is the model a task compares every result with; "baseline" alone is
the tier (docs/concepts.md, "Glossary"). The public names keep the old word: the table
``baseline_comparisons``, a Result's ``versus_baseline`` with its ``baseline_run_id`` and
``baseline_model``, the vitaldb-ioh spec key ``baseline_model`` and the plug-in hooks
``TaskFamily.baseline_model`` and ``Kind.baseline_difference``.

A comparison depends on two runs, so it cannot live in either result.json (nor in a run id): it is
computed when a warehouse version is published, from the finished runs' predictions, and handed
to ``warehouse.publish`` as plain rows (the warehouse imports nothing from pipelines). Which model
a task is compared with is the task's own business (its family's ``baseline_model(task)``, e.g.
the vitaldb-ioh spec's ``baseline_model`` key), so no task is named here. The reference run is the
newest result of that model on the same task version (the one that supersedes the others); each
other result of the task, superseded or not, that predicted exactly the reference run's items with the
same ground truth (the kind's ``truth_columns``) gets the paired difference to it, as the task's kind computes it
(``medbench.kinds``: for ``score``, the cluster bootstrap of ``/v1/compare`` over the family's
cluster column) with the task's bootstrap settings.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from medbench.kind import read_aligned
from pipelines.engine.specs import Specs
from medbench.kinds import kind as kind_of
from medbench.layout import DataDir
from medbench.records import ResultRecord


def reference_comparison_rows(specs: Specs, data: DataDir, results: list[ResultRecord],
                             only: Collection[str] | None = None,
                             previous: Mapping[tuple[str, str], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per (result, its task's baseline run), the baseline's own result left out. ``only``:
    these tasks alone (``results`` holds all of theirs); ``previous``: rows by (run_id,
    baseline_run_id) already computed, reused as they are (a comparison is deterministic in the two
    runs' predictions, which never change for a run id), so a publish compares new results only."""
    rows: list[dict[str, Any]] = []
    for ref, task in sorted(specs.tasks.items()):
        if only is not None and ref not in only:
            continue
        fam = specs.family_of(task)
        reference_slug = fam.baseline_model(task)
        if not reference_slug:
            continue
        strategy, cluster = kind_of(task.kind), fam.cluster_column
        truth = list(strategy.truth_columns)
        columns = list(dict.fromkeys([*strategy.paired_columns, *truth, *([cluster] if cluster else [])]))
        runs = [r for r in results if r.task == ref]
        bases = [r for r in runs if r.model.slug == reference_slug]
        if not bases:
            continue
        base = max(bases, key=lambda r: (r.created_at, r.run_id))
        if not data.predictions_path(base.run_id).exists():
            continue
        for r in sorted(runs, key=lambda r: r.run_id):
            if r.model.slug == reference_slug:
                continue
            if previous and (r.run_id, base.run_id) in previous:
                rows.append(dict(previous[(r.run_id, base.run_id)]))
                continue
            if not data.predictions_path(r.run_id).exists():
                continue
            (a, b), sizes = read_aligned([data.predictions_path(r.run_id), data.predictions_path(base.run_id)], columns)
            n_shared = len(a[columns[0]])
            if any(n != n_shared for n in sizes) or not all(np.array_equal(a[c], b[c]) for c in truth):
                continue  # not the same items: no paired comparison
            d = strategy.baseline_difference(a, b, cluster, task.bootstrap.replicates, task.bootstrap.seed)
            if d is None:
                continue
            rows.append({
                "run_id": r.run_id, "baseline_run_id": base.run_id, "baseline_model": reference_slug,
                "metric": d.metric, "difference": d.difference, "ci_low": d.ci_low, "ci_high": d.ci_high,
                "p_value": d.p_value, "method": d.method, "replicates": task.bootstrap.replicates,
                "seed": task.bootstrap.seed, "dropped_replicates": d.dropped_replicates,
                "p_at_floor": d.p_at_floor,
            })
    return rows
