"""Paired comparison of two results of one task, on the items both of them scored.

Two leaderboard intervals that overlap do not mean two models are indistinguishable, and two that
do not overlap are not a test either: both results were computed on the *same* items, so the
question "is A better than B" has to be answered on the paired differences. This module reads the
two predictions files and hands them to the task's kind (``medbench.kinds``: the strategies, with
the resampling of the published intervals themselves from ``medbench.stats``), so a comparison, a
leaderboard interval and a difference to the reference model cannot drift apart:

- Items are the intersection of the two files' ``instance_id`` values, taken in sorted
  ``instance_id`` order (``medbench.kind.align``), so the answer does not depend on how
  either file is ordered.
- Accuracy (kind ``choice``): the exact McNemar test and its conditional exact (Clopper-Pearson)
  interval, which excludes 0 exactly when p < 0.05 (``medbench.kinds.choice``). ``replicates``
  and ``seed`` are reported but not used.
- AUROC (kind ``score``): a paired cluster bootstrap (``medbench.kinds.score``) whose clusters are
  the values of the task's cluster column, as the warehouse's ``tasks`` table records it (items of
  one cluster are not independent); a task without one resamples items. One-class replicates are
  left out and counted (``dropped_replicates``); the p-value inverts the percentile interval (the
  smallest level at which it excludes 0, so p < 0.05 exactly when the 95% interval excludes 0),
  with a floor of 2 / (R + 1) flagged ``p_at_floor``.

The seed and the number of replicates are the task's own bootstrap settings, so a comparison is
as reproducible as the published intervals.

Its file name is shared on purpose: the API's side of the computation of the same name (it reads
published rows; the numbers are computed in the pipeline).
"""

from __future__ import annotations

from pathlib import Path

from medbench.kind import Comparison, ComparisonError, read_aligned
from medbench.kinds import kind as kind_of
from medbench.kinds.choice import mcnemar_exact, paired_accuracy
from medbench.kinds.score import paired_auroc
from medbench.stats.auroc import auroc
from medbench.stats.paired_auroc import bootstrap_p_value

__all__ = ["Comparison", "ComparisonError", "auroc", "bootstrap_p_value", "compare_files", "mcnemar_exact",
           "paired_accuracy", "paired_auroc"]  # ``auroc``: the published point estimate, re-exported


def compare_files(kind: str, path_a: Path, path_b: Path, replicates: int, seed: int,
                  cluster_column: str | None = None) -> Comparison:
    """Compare two predictions files of one task of kind ``kind``, resampling ``cluster_column``'s
    values (None: items)."""
    try:
        strategy = kind_of(kind)
    except KeyError:
        raise ComparisonError(f"results of a {kind!r} task cannot be compared") from None
    columns = [*strategy.paired_columns, *([cluster_column] if cluster_column else [])]
    (a, b), _ = read_aligned([path_a, path_b], columns)
    if len(a[columns[0]]) == 0:
        raise ComparisonError("the two results share no items (no instance_id in common)")
    return strategy.compare(a, b, cluster_column, replicates, seed)
