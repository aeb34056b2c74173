"""Paired comparison of two results of one task, on the items both of them scored.

Two leaderboard intervals that overlap do not mean two models are indistinguishable, and two that
do not overlap are not a test either: both results were computed on the *same* items, so the
question "is A better than B" has to be answered on the paired differences. This module does that
from the two predictions files, with the resampling of the published intervals themselves: the
bootstrap draws, cluster multiplicities and pair-win counts come from ``pipelines.stats`` (numpy
only, and the one part of ``pipelines`` that ``api`` may import), so a comparison and a leaderboard
interval cannot drift apart:

- Items are the intersection of the two files' ``instance_id`` values, taken in sorted
  ``instance_id`` order, so the answer does not depend on how either file is ordered.
- Accuracy tasks: the difference is accuracy(A) - accuracy(B) on the shared items. With b = items
  only A got right and c = items only B got right, the p-value is the exact McNemar test and the
  95% interval is its conditional exact counterpart (``pipelines.stats.paired.paired_accuracy``):
  Clopper-Pearson on b/(b+c) mapped to the difference, [(2 tL - 1)(b+c)/n, (2 tU - 1)(b+c)/n].
  The interval excludes 0 exactly when p < 0.05, so the two never disagree (a percentile bootstrap
  interval next to an exact test can: b = 9, c = 20 gives p = 0.061 with a bootstrap interval that
  excludes 0). ``replicates`` and ``seed`` are reported but not used for accuracy.
- AUROC tasks: windows of one patient are not independent, so the interval is a paired cluster
  bootstrap over subjects (``pipelines.stats.auroc``): clusters are the sorted unique ``subjectid``
  values; ``draws = default_rng(seed).integers(0, C, size=(replicates, C))``; replicate r takes the
  subjects ``draws[r]`` (with repetition) and all their windows, for *both* models at once, and
  records AUROC(A) - AUROC(B) on that resample. A replicate whose windows hold one class only has
  no AUROC; it is left out and counted (``dropped_replicates``). The interval is the 2.5th and
  97.5th percentiles of the kept differences. The p-value is the two-sided bootstrap p-value that
  matches this percentile interval: ``min(1, 2 * min((1 + #{d <= 0}) / (1 + R), (1 + #{d >= 0}) /
  (1 + R)))`` over the R kept replicate differences d, i.e. about the smallest level at which the
  interval would exclude 0; the +1 terms (Davison and Hinkley) keep it from ever being exactly 0,
  which sets a floor: no p below 2 / (R + 1) can be shown (R = 1,000 kept replicates: 0.002), so a
  p at the floor reads "p <= 2/(R+1)", not an exact value.

The seed and the number of replicates are the task's own bootstrap settings, so a comparison is
as reproducible as the published intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from pipelines.stats.auroc import auroc
from pipelines.stats.paired_auroc import bootstrap_p_value, paired_auroc_difference
from pipelines.stats.paired import mcnemar_exact_p, paired_accuracy_from_correct

__all__ = ["Comparison", "ComparisonError", "auroc", "bootstrap_p_value", "compare_files", "mcnemar_exact",
           "paired_accuracy", "paired_auroc"]  # ``auroc``: the published point estimate, re-exported


class ComparisonError(ValueError):
    """The two results cannot be compared (no shared items, labels that disagree, one class only)."""


@dataclass(frozen=True)
class Comparison:
    metric: str
    n_shared: int
    value_a: float  # the metric of A on the shared items
    value_b: float
    difference: float  # value_a - value_b
    ci_low: float
    ci_high: float
    p_value: float
    method: str
    replicates: int
    seed: int
    dropped_replicates: int
    a_only_correct: int | None  # accuracy tasks: discordant pairs A right / B wrong
    b_only_correct: int | None  # ... and A wrong / B right


# --------------------------------------------------------------------------- accuracy


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p-value from the two discordant counts (1.0 when both are 0)."""
    return mcnemar_exact_p(a_only, b_only)


def paired_accuracy(correct_a, correct_b, replicates: int, seed: int) -> Comparison:
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("correct_a and correct_b must be 1-d arrays of the same length")
    if a.size == 0:
        raise ComparisonError("the two results share no items")
    exact = paired_accuracy_from_correct(a, b)
    return Comparison(
        metric="accuracy", n_shared=int(a.size), value_a=float(a.mean()), value_b=float(b.mean()),
        difference=exact.difference, ci_low=exact.ci_low, ci_high=exact.ci_high, p_value=exact.p_value,
        method="exact McNemar test; conditional exact (Clopper-Pearson on b/(b+c)) interval for the difference",
        replicates=replicates, seed=seed, dropped_replicates=0, a_only_correct=exact.b, b_only_correct=exact.c,
    )


# --------------------------------------------------------------------------- AUROC


def paired_auroc(scores_a, scores_b, labels, clusters, replicates: int, seed: int) -> Comparison:
    y = np.asarray(labels).reshape(-1).astype(bool)
    if len(y) == 0:
        raise ComparisonError("the two results share no items")
    if y.all() or not y.any():
        raise ComparisonError("the shared items hold one class only: AUROC is undefined")
    if not np.isfinite(np.asarray(scores_a, dtype=np.float64)).all() or not np.isfinite(
        np.asarray(scores_b, dtype=np.float64)
    ).all():
        raise ComparisonError("scores contain NaN or infinity")
    d = paired_auroc_difference(scores_a, scores_b, y, clusters, replicates, seed)
    if d is None:
        raise ComparisonError("every bootstrap replicate held one class only")
    return Comparison(
        metric="auroc", n_shared=len(y), value_a=d.value_a, value_b=d.value_b, difference=d.difference,
        ci_low=d.ci_low, ci_high=d.ci_high, p_value=d.p_value,
        method=f"paired cluster bootstrap over {d.n_clusters} subjects ({replicates} replicates, seed {seed}); "
        "two-sided bootstrap p-value",
        replicates=replicates, seed=seed, dropped_replicates=d.dropped,
        a_only_correct=None, b_only_correct=None,
    )


# --------------------------------------------------------------------------- from the predictions files


def _shared(path_a: Path, path_b: Path, columns: list[str]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Both files' ``columns`` on the shared instance ids, in sorted instance_id order."""
    tables = [pq.read_table(p, columns=["instance_id", *columns]) for p in (path_a, path_b)]
    ids = [t.column("instance_id").to_numpy().astype(str) for t in tables]
    shared = np.intersect1d(ids[0], ids[1])
    if len(shared) == 0:
        raise ComparisonError("the two results share no items (no instance_id in common)")
    out = []
    for t, i in zip(tables, ids):
        order = np.argsort(i, kind="stable")
        pick = order[np.searchsorted(i[order], shared)]
        out.append({name: t.column(name).to_numpy()[pick] for name in columns})
    return out[0], out[1]


def compare_files(kind: str, path_a: Path, path_b: Path, replicates: int, seed: int) -> Comparison:
    """Compare two predictions files of one task; ``kind`` is ``choice`` (accuracy) or ``score`` (AUROC)."""
    if kind == "choice":
        a, b = _shared(path_a, path_b, ["correct", "label"])
        if not np.array_equal(a["label"], b["label"]):
            raise ComparisonError("the two results disagree on the gold label of a shared item")
        return paired_accuracy(a["correct"].astype(bool), b["correct"].astype(bool), replicates, seed)
    if kind == "score":
        a, b = _shared(path_a, path_b, ["score", "label", "subjectid"])
        if not np.array_equal(a["label"], b["label"]) or not np.array_equal(a["subjectid"], b["subjectid"]):
            raise ComparisonError("the two results disagree on the label or subject of a shared window")
        return paired_auroc(a["score"], b["score"], a["label"], a["subjectid"], replicates, seed)
    raise ComparisonError(f"results of a {kind!r} task cannot be compared")
