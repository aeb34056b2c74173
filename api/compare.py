"""Paired comparison of two results of one task, on the items both of them scored.

Two leaderboard intervals that overlap do not mean two models are indistinguishable, and two that
do not overlap are not a test either: both results were computed on the *same* items, so the
question "is A better than B" has to be answered on the paired differences. This module does that
with numpy only (``api`` never imports ``pipelines``), from the two predictions files:

- Items are the intersection of the two files' ``instance_id`` values, taken in sorted
  ``instance_id`` order, so the answer does not depend on how either file is ordered.
- Accuracy tasks: the difference is accuracy(A) - accuracy(B) on the shared items. Its 95% interval
  is a percentile bootstrap over items of the per-item differences ``correct_a - correct_b``
  (replicate r uses ``rng.integers(0, n, size=n)`` from ``np.random.default_rng(seed)``, in order,
  the same draw as the published intervals). The p-value is the exact McNemar test: a two-sided
  binomial test (p = 1/2) on the discordant pairs, ``min(1, 2 * P(X <= min(b, c)))`` with
  X ~ Bin(b + c, 1/2), and 1 when there is no discordant pair.
- AUROC tasks: windows of one patient are not independent, so the interval is a paired cluster
  bootstrap over subjects: clusters are the sorted unique ``subjectid`` values;
  ``draws = default_rng(seed).integers(0, C, size=(replicates, C))``; replicate r takes the
  subjects ``draws[r]`` (with repetition) and all their windows, for *both* models at once, and
  records AUROC(A) - AUROC(B) on that resample. A replicate whose windows hold one class only has
  no AUROC; it is left out and counted (``dropped_replicates``). The interval is the 2.5th and
  97.5th percentiles of the kept differences. The p-value is the two-sided bootstrap p-value that
  matches this percentile interval: ``min(1, 2 * min((1 + #{d <= 0}) / (1 + R), (1 + #{d >= 0}) /
  (1 + R)))`` over the R kept replicate differences d, i.e. about the smallest level at which the
  interval would exclude 0; the +1 terms (Davison and Hinkley) keep it from ever being exactly 0.

The seed and the number of replicates are the task's own bootstrap settings, so a comparison is
as reproducible as the published intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

_BATCH_ELEMENTS = 4_000_000  # float64 cells per batch of weighted-AUROC replicates (32 MB)


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
    if a_only < 0 or b_only < 0:
        raise ValueError("discordant counts must be non-negative")
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(a_only, b_only) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def bootstrap_mean_replicates(values: np.ndarray, replicates: int, seed: int) -> np.ndarray:
    """Replicate means: replicate r resamples ``values`` with ``rng.integers(0, n, size=n)``, in order."""
    data = np.asarray(values, dtype=np.float64)
    n = data.size
    rng = np.random.default_rng(seed)
    rows_per_chunk = max(1, _BATCH_ELEMENTS // n)
    means = np.empty(replicates, dtype=np.float64)
    for start in range(0, replicates, rows_per_chunk):
        rows = min(rows_per_chunk, replicates - start)
        means[start : start + rows] = data[rng.integers(0, n, size=(rows, n))].mean(axis=1)
    return means


def paired_accuracy(correct_a, correct_b, replicates: int, seed: int) -> Comparison:
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("correct_a and correct_b must be 1-d arrays of the same length")
    if a.size == 0:
        raise ComparisonError("the two results share no items")
    diffs = a.astype(np.float64) - b.astype(np.float64)
    low, high = np.percentile(bootstrap_mean_replicates(diffs, replicates, seed), [2.5, 97.5])
    a_only, b_only = int((a & ~b).sum()), int((~a & b).sum())
    return Comparison(
        metric="accuracy", n_shared=int(a.size), value_a=float(a.mean()), value_b=float(b.mean()),
        difference=float(diffs.mean()), ci_low=float(low), ci_high=float(high),
        p_value=mcnemar_exact(a_only, b_only),
        method=f"paired percentile bootstrap over items ({replicates} replicates, seed {seed}); exact McNemar test",
        replicates=replicates, seed=seed, dropped_replicates=0, a_only_correct=a_only, b_only_correct=b_only,
    )


# --------------------------------------------------------------------------- AUROC


def auroc(scores, labels) -> float:
    """AUROC with ties counted 1/2 (equal to scikit-learn's ``roc_auc_score``); NaN with one class."""
    n = len(np.asarray(scores).reshape(-1))
    pairs = ClusterPairs.of(scores, labels, np.zeros(n, dtype=np.int64), 1)
    return float(pairs.aurocs(np.ones((1, 1)))[0])


@dataclass(frozen=True)
class ClusterPairs:
    """Everything a cluster-resampled AUROC needs, from one pass over the windows.

    ``wins[i, j]`` counts (positive window of cluster i, negative window of cluster j) pairs that
    the positive wins (a tie counts 1/2); ``positives[i]`` and ``negatives[j]`` count windows. A
    replicate that takes cluster k ``m[k]`` times contains each of its windows ``m[k]`` times, so
    its AUROC, exactly what ``roc_auc_score`` gives on the concatenated resampled windows, is
    ``m^T wins m / ((m . positives) (m . negatives))``: a small matrix product per replicate.
    """

    wins: np.ndarray  # float64 [C, C]
    positives: np.ndarray  # float64 [C]
    negatives: np.ndarray  # float64 [C]

    @classmethod
    def of(cls, scores, labels, cluster_index, n_clusters: int) -> ClusterPairs:
        s = np.asarray(scores, dtype=np.float64).reshape(-1)
        y = np.asarray(labels).reshape(-1).astype(bool)
        c = np.asarray(cluster_index, dtype=np.int64).reshape(-1)
        if not (len(s) == len(y) == len(c)):
            raise ValueError("scores, labels and clusters must have the same length")
        if not np.isfinite(s).all():
            raise ComparisonError("scores contain NaN or infinity")
        positives = np.bincount(c, weights=y, minlength=n_clusters)
        negatives = np.bincount(c, weights=~y, minlength=n_clusters)
        if y.sum() <= (~y).sum():
            wins = _twice_wins(s, y, c, n_clusters) / 2.0
        else:  # rows on the smaller class: positives beating negatives = negatives "beating" them on -score
            wins = _twice_wins(-s, ~y, c, n_clusters).T / 2.0
        return cls(wins=wins, positives=positives, negatives=negatives)

    def aurocs(self, counts: np.ndarray) -> np.ndarray:
        """AUROC per row of cluster multiplicities; NaN where a row holds one class only."""
        m = np.asarray(counts, dtype=np.float64)
        numerator = np.einsum("rj,rj->r", m @ self.wins, m)
        denominator = (m @ self.positives) * (m @ self.negatives)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(denominator > 0, numerator / denominator, np.nan)


def cluster_counts(n_clusters: int, replicates: int, seed: int) -> np.ndarray:
    """[replicates, n_clusters] multiplicities of ``default_rng(seed).integers(0, C, size=(R, C))``."""
    draws = np.random.default_rng(seed).integers(0, n_clusters, size=(replicates, n_clusters))
    flat = draws + (np.arange(replicates, dtype=np.int64) * n_clusters)[:, None]
    return np.bincount(flat.reshape(-1), minlength=replicates * n_clusters).reshape(replicates, n_clusters)


def bootstrap_p_value(differences: np.ndarray) -> float:
    """Two-sided p-value matching the percentile interval (see the module docstring)."""
    d = np.asarray(differences, dtype=np.float64)
    r = len(d)
    if r == 0:
        return float("nan")
    below = (1 + int((d <= 0).sum())) / (1 + r)
    above = (1 + int((d >= 0).sum())) / (1 + r)
    return float(min(1.0, 2 * min(below, above)))


def _twice_wins(s: np.ndarray, rows: np.ndarray, c: np.ndarray, n_clusters: int) -> np.ndarray:
    """2 x wins over pairs (a in ``rows``, cluster i; b not in ``rows``, cluster j), as [C, C] floats.

    2 x wins = [s_b < s_a] + [s_b <= s_a] (a tie counted twice 1/2, to stay in integers). With the
    ``rows`` windows sorted by score, window b adds one to column j for every row from the first
    row scoring above it on, and one more from the first row scoring at least as much. So each b
    is two events "from row k on, cluster j gains one"; walking the rows in blocks, a cumulative
    sum of events gives every row its counts per cluster, which are added to the row's cluster.
    Cost: (rows) x C cells, in blocks of bounded memory.
    """
    a = np.flatnonzero(rows)
    a = a[np.argsort(s[a], kind="stable")]
    a_score, a_cluster = s[a], c[a]
    b = np.flatnonzero(~rows)
    event_row = np.concatenate([np.searchsorted(a_score, s[b], "right"), np.searchsorted(a_score, s[b], "left")])
    event_cluster = np.concatenate([c[b], c[b]])
    order = np.argsort(event_row, kind="stable")
    event_row, event_cluster = event_row[order], event_cluster[order]
    twice = np.zeros((n_clusters, n_clusters), dtype=np.int64)
    running = np.zeros(n_clusters, dtype=np.int64)
    block = max(1, _BATCH_ELEMENTS // max(n_clusters, 1))
    for k0 in range(0, len(a), block):
        k1 = min(len(a), k0 + block)
        lo, hi = np.searchsorted(event_row, [k0, k1])
        flat = (event_row[lo:hi] - k0) * n_clusters + event_cluster[lo:hi]
        counts = np.cumsum(np.bincount(flat, minlength=(k1 - k0) * n_clusters).reshape(k1 - k0, n_clusters), axis=0)
        counts += running
        running = counts[-1].copy()
        np.add.at(twice, a_cluster[k0:k1], counts)
    return twice.astype(np.float64)


def paired_auroc(scores_a, scores_b, labels, clusters, replicates: int, seed: int) -> Comparison:
    y = np.asarray(labels).reshape(-1).astype(bool)
    if len(y) == 0:
        raise ComparisonError("the two results share no items")
    if y.all() or not y.any():
        raise ComparisonError("the shared items hold one class only: AUROC is undefined")
    ids, cluster_index = np.unique(np.asarray(clusters).reshape(-1), return_inverse=True)
    pairs_a = ClusterPairs.of(scores_a, y, cluster_index, len(ids))
    pairs_b = ClusterPairs.of(scores_b, y, cluster_index, len(ids))
    whole = np.ones((1, len(ids)))
    value_a, value_b = float(pairs_a.aurocs(whole)[0]), float(pairs_b.aurocs(whole)[0])
    counts = cluster_counts(len(ids), replicates, seed)
    diffs = pairs_a.aurocs(counts) - pairs_b.aurocs(counts)
    kept = diffs[np.isfinite(diffs)]
    if len(kept) == 0:
        raise ComparisonError("every bootstrap replicate held one class only")
    low, high = np.percentile(kept, [2.5, 97.5])
    return Comparison(
        metric="auroc", n_shared=len(y), value_a=value_a, value_b=value_b, difference=value_a - value_b,
        ci_low=float(low), ci_high=float(high), p_value=bootstrap_p_value(kept),
        method=f"paired cluster bootstrap over {len(ids)} subjects ({replicates} replicates, seed {seed}); "
        "two-sided bootstrap p-value",
        replicates=replicates, seed=seed, dropped_replicates=int(len(diffs) - len(kept)),
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
