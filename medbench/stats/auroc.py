"""AUROC, AUPRC and their cluster-bootstrap intervals, fast enough for 10,000 replicates.

Windows from one patient are not independent, so the interval resamples *subjects* (clusters)
with replacement, not windows. The trick that keeps this cheap: when whole clusters are the unit
of resampling, the AUROC of any resample is a function of per-cluster counts only. With

    W[i, j] = #{(p, q): p positive in cluster i, q negative in cluster j, s_p > s_q}
              + 0.5 * #{... s_p == s_q}
    P[i], N[i] = positives, negatives in cluster i

a resample that takes cluster i m[i] times has AUROC = (m^T W m) / ((m.P) (m.N)). W is computed
once from one sort of the scores (in row blocks, so memory stays bounded), and every replicate is
then a couple of small matrix products: no replicate revisits a window.

The resampling draw, exactly (so any reference implementation can reproduce it): clusters are
the sorted unique cluster ids, indexed 0..C-1; ``rng = np.random.default_rng(seed)``;
``draws = rng.integers(0, C, size=(replicates, C))``; replicate r takes the clusters
``draws[r]`` (with repetition) and all their windows. A replicate whose windows hold one class
only has no AUROC: it is left out of every interval and counted in ``n_dropped``. Intervals are
percentile intervals (``np.percentile`` at 100 alpha/2 and 100 (1 - alpha/2), linear
interpolation), alpha = 0.05 or the expanded level of ``medbench.stats.intervals``.

AUPRC equals scikit-learn's ``average_precision_score`` (step-wise, ties grouped); per replicate
it is computed exactly with window weights = the multiplicity of the window's cluster, which is
what ``average_precision_score(..., sample_weight=m[cluster])`` computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_BLOCK_ELEMENTS = 1_000_000  # rows x clusters per block of the pair-count pass (8 MB of int64)
_REPLICATE_BATCH = 2_000
_AP_BATCH_ELEMENTS = 4_000_000


# --------------------------------------------------------------------------- point estimates


def _as_arrays(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    y = np.asarray(labels).reshape(-1).astype(bool)
    if len(s) != len(y):
        raise ValueError(f"{len(s)} scores but {len(y)} labels")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    return s, y


def auroc(scores, labels) -> float:
    """Area under the ROC curve; a tie between a positive and a negative counts 1/2."""
    s, y = _as_arrays(scores, labels)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    _, group = np.unique(s, return_inverse=True)
    pos = np.bincount(group, weights=y, minlength=group.max() + 1)
    neg = np.bincount(group, weights=~y, minlength=group.max() + 1)
    below = np.cumsum(neg) - neg
    return float((pos * (below + 0.5 * neg)).sum() / (n_pos * n_neg))


def _descending(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order by score descending (stable) and the last index of each run of equal scores."""
    order = np.argsort(-s, kind="mergesort")
    sorted_s = s[order]
    ends = np.r_[np.flatnonzero(np.diff(sorted_s) != 0), len(s) - 1] if len(s) else np.zeros(0, np.int64)
    return order, ends


def _average_precision(tp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """AP from cumulative (weighted) true/false positives at each threshold, along the last axis."""
    total = tp[..., -1:]
    seen = tp + fp
    precision = np.divide(tp, seen, out=np.zeros_like(tp), where=seen > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = tp / total
    step = np.diff(recall, axis=-1, prepend=0.0)
    return (step * precision).sum(axis=-1)


def auprc(scores, labels, sample_weight=None) -> float:
    """Average precision, as ``sklearn.metrics.average_precision_score`` (also with sample weights)."""
    s, y = _as_arrays(scores, labels)
    w = np.ones(len(s)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if not (w * y).sum() > 0:
        return float("nan")
    order, ends = _descending(s)
    wy = (w * y)[order]
    tp = np.cumsum(wy)[ends]
    fp = np.cumsum(w[order] - wy)[ends]
    return float(_average_precision(tp, fp))


def roc_points(scores, labels, max_points: int = 200) -> dict[str, list[float]]:
    """ROC curve (FPR, TPR at every distinct threshold, from (0, 0) to (1, 1)), evenly thinned."""
    s, y = _as_arrays(scores, labels)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return {"fpr": [], "tpr": []}
    order, ends = _descending(s)
    tps = np.r_[0, np.cumsum(y[order])[ends]]
    fps = np.r_[0, np.cumsum(~y[order])[ends]]
    fpr, tpr = fps / n_neg, tps / n_pos
    if len(fpr) > max_points:
        keep = np.unique(np.round(np.linspace(0, len(fpr) - 1, max(max_points, 2))).astype(np.int64))
        fpr, tpr = fpr[keep], tpr[keep]
    return {"fpr": [round(float(v), 6) for v in fpr], "tpr": [round(float(v), 6) for v in tpr]}


# --------------------------------------------------------------------------- resampling


def resample_cluster_counts(n_clusters: int, replicates: int, seed: int) -> np.ndarray:
    """Multiplicity of each cluster in each replicate, int32 [replicates, n_clusters].

    Row r counts ``draws[r]`` with ``draws = default_rng(seed).integers(0, n_clusters,
    size=(replicates, n_clusters))``.
    """
    draws = resample_cluster_draws(n_clusters, replicates, seed)
    counts = np.empty((replicates, n_clusters), dtype=np.int32)
    batch = max(1, _BLOCK_ELEMENTS // max(n_clusters, 1))
    for r0 in range(0, replicates, batch):
        rows = draws[r0 : r0 + batch]
        flat = rows + (np.arange(len(rows), dtype=np.int64) * n_clusters)[:, None]
        counts[r0 : r0 + len(rows)] = np.bincount(flat.reshape(-1), minlength=len(rows) * n_clusters).reshape(
            len(rows), n_clusters
        )
    return counts


def resample_cluster_draws(n_clusters: int, replicates: int, seed: int) -> np.ndarray:
    """The drawn cluster indices, int64 [replicates, n_clusters] (see the module docstring)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_clusters, size=(replicates, n_clusters))


# --------------------------------------------------------------------------- pair counts


@dataclass(frozen=True)
class ClusterPairCounts:
    """W, P and N of the module docstring, for clusters ``ids`` (sorted unique cluster ids)."""

    ids: np.ndarray
    wins: np.ndarray  # float64 [C, C]: W[i, j], positives of i over negatives of j (ties 1/2)
    positives: np.ndarray  # float64 [C]
    negatives: np.ndarray  # float64 [C]


def cluster_pair_counts(scores, labels, clusters) -> ClusterPairCounts:
    s, y = _as_arrays(scores, labels)
    ids, c = np.unique(np.asarray(clusters).reshape(-1), return_inverse=True)
    c = c.reshape(-1)
    if len(c) != len(s):
        raise ValueError(f"{len(s)} scores but {len(c)} cluster ids")
    n_clusters = len(ids)
    pos = np.bincount(c, weights=y, minlength=n_clusters)
    neg = np.bincount(c, weights=~y, minlength=n_clusters)
    if y.sum() <= (~y).sum():
        twice = _twice_wins(s, y, c, n_clusters)
    else:  # rows on the smaller class: wins of positives over negatives = wins of -negatives over -positives
        twice = _twice_wins(-s, ~y, c, n_clusters).T
    return ClusterPairCounts(ids=ids, wins=twice / 2.0, positives=pos, negatives=neg)


def _twice_wins(s: np.ndarray, rows: np.ndarray, c: np.ndarray, n_clusters: int) -> np.ndarray:
    """2 W[i, j] over pairs (a in ``rows`` of cluster i, b not in ``rows`` of cluster j).

    2W counts [s_b < s_a] + [s_b <= s_a] (the tie half doubled to stay in integers). With the row
    windows sorted by score group, a window b counts for every row a at or after the first row
    whose group is > b's (strict part) and at or after the first row whose group is >= b's (tie
    part); each b thus becomes two events "from row k on, cluster j gains one". Walking the rows
    in blocks, a cumulative sum of events gives each row's counts per cluster, and rows are summed
    into their cluster.
    """
    _, group = np.unique(s, return_inverse=True)
    group = group.reshape(-1)
    a_idx = np.flatnonzero(rows)
    b_idx = np.flatnonzero(~rows)
    a_order = a_idx[np.argsort(group[a_idx], kind="stable")]
    a_group, a_cluster = group[a_order], c[a_order]
    b_group, b_cluster = group[b_idx], c[b_idx]
    event_row = np.concatenate(
        [np.searchsorted(a_group, b_group, side="right"), np.searchsorted(a_group, b_group, side="left")]
    )
    event_cluster = np.concatenate([b_cluster, b_cluster])
    by_row = np.argsort(event_row, kind="stable")
    event_row, event_cluster = event_row[by_row], event_cluster[by_row]

    n_rows = len(a_order)
    twice = np.zeros((n_clusters, n_clusters), dtype=np.int64)
    running = np.zeros(n_clusters, dtype=np.int64)
    block = max(1, _BLOCK_ELEMENTS // max(n_clusters, 1))
    for k0 in range(0, n_rows, block):
        k1 = min(n_rows, k0 + block)
        lo, hi = np.searchsorted(event_row, [k0, k1])
        flat = (event_row[lo:hi] - k0) * n_clusters + event_cluster[lo:hi]
        events = np.bincount(flat, minlength=(k1 - k0) * n_clusters).reshape(k1 - k0, n_clusters)
        counts = np.cumsum(events, axis=0)
        counts += running
        running += events.sum(axis=0)
        block_cluster = a_cluster[k0:k1]
        order = np.argsort(block_cluster, kind="stable")
        sorted_cluster = block_cluster[order]
        starts = np.r_[0, np.flatnonzero(np.diff(sorted_cluster)) + 1]
        twice[sorted_cluster[starts]] += np.add.reduceat(counts[order], starts, axis=0)
    return twice


def replicate_aurocs(pairs: ClusterPairCounts, counts: np.ndarray) -> np.ndarray:
    """AUROC of each replicate (rows of cluster multiplicities); NaN where one class is absent."""
    out = np.empty(len(counts), dtype=np.float64)
    for r0 in range(0, len(counts), _REPLICATE_BATCH):
        m = counts[r0 : r0 + _REPLICATE_BATCH].astype(np.float64)
        numerator = np.einsum("rj,rj->r", m @ pairs.wins, m)
        denominator = (m @ pairs.positives) * (m @ pairs.negatives)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[r0 : r0 + len(m)] = np.where(denominator > 0, numerator / denominator, np.nan)
    return out


def replicate_auprcs(scores, labels, clusters, counts: np.ndarray) -> np.ndarray:
    """AUPRC of each replicate, exactly (window weight = its cluster's multiplicity); NaN if one-class.

    ``counts`` columns follow the sorted unique ids of ``clusters``. Only thresholds at a score
    held by a positive move recall, so the sum runs over those: per replicate, weighted cumulative
    sums over the positives and over the negatives (integers, exact), read at those thresholds.
    Cost is O(windows) per replicate, batched so that memory stays bounded.
    """
    s, y = _as_arrays(scores, labels)
    _, c = np.unique(np.asarray(clusters).reshape(-1), return_inverse=True)
    c = c.reshape(-1)
    out = np.full(len(counts), np.nan)
    if y.all() or not y.any():
        return out
    order, ends = _descending(s)
    rank = np.empty(len(s), dtype=np.int64)  # distinct-score rank, 0 = highest score
    rank[order] = np.repeat(np.arange(len(ends)), np.diff(np.r_[-1, ends]))
    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
    pos = pos[np.argsort(rank[pos], kind="stable")]
    neg = neg[np.argsort(rank[neg], kind="stable")]
    pos_rank, neg_rank = rank[pos], rank[neg]
    pos_end = np.r_[np.flatnonzero(np.diff(pos_rank)), len(pos) - 1]  # last positive of each threshold
    neg_seen = np.searchsorted(neg_rank, pos_rank[pos_end], side="right")  # negatives at or above it
    neg_at = np.maximum(neg_seen - 1, 0)
    has_neg = neg_seen > 0
    pos_cluster, neg_cluster = c[pos], c[neg]
    wide = int(counts.max(initial=0)) * len(s) >= 2**31
    acc = np.int64 if wide else np.int32
    batch = max(1, _AP_BATCH_ELEMENTS // len(s))
    for r0 in range(0, len(counts), batch):
        m = counts[r0 : r0 + batch].astype(acc)
        tp = np.cumsum(m[:, pos_cluster], axis=1, dtype=acc)[:, pos_end].astype(np.float64)
        cum_neg = np.cumsum(m[:, neg_cluster], axis=1, dtype=acc)
        fp = np.where(has_neg, cum_neg[:, neg_at], 0).astype(np.float64)
        ap = _average_precision(tp, fp)
        one_class = (tp[:, -1] == 0) | (cum_neg[:, -1] == 0)
        out[r0 : r0 + len(m)] = np.where(one_class, np.nan, ap)
    return out


# --------------------------------------------------------------------------- the bootstrap


@dataclass(frozen=True)
class ClusterBootstrap:
    auroc: float
    ci_low: float
    ci_high: float
    replicate_values: np.ndarray  # AUROC per replicate, NaN for the dropped ones (aligned with the draws)
    n_replicates: int
    n_dropped: int  # replicates with one class only, left out of every interval
    auprc: float
    auprc_ci_low: float
    auprc_ci_high: float
    prevalence: float
    prevalence_ci_low: float
    prevalence_ci_high: float
    n_windows: int
    n_positive: int
    n_clusters: int
    seed: int
    prevalence_kept: int = 0  # replicates behind the prevalence interval

    def metrics(self) -> list[dict]:
        """Rows {name, value, ci_low, ci_high, replicates_kept} in the order auroc, auprc, prevalence."""
        kept = self.n_replicates - self.n_dropped
        return [
            {"name": "auroc", "value": self.auroc, "ci_low": self.ci_low, "ci_high": self.ci_high,
             "replicates_kept": kept},
            {"name": "auprc", "value": self.auprc, "ci_low": self.auprc_ci_low, "ci_high": self.auprc_ci_high,
             "replicates_kept": kept},
            {
                "name": "prevalence",
                "value": self.prevalence,
                "ci_low": self.prevalence_ci_low,
                "ci_high": self.prevalence_ci_high,
                "replicates_kept": self.prevalence_kept,
            },
        ]


def _interval(values: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    values = values[np.isfinite(values)]
    if len(values) == 0 or not np.isfinite(alpha):
        return float("nan"), float("nan")
    low, high = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(low), float(high)


def cluster_bootstrap(
    scores, labels, clusters, replicates: int, seed: int, with_auprc: bool = True,
    prevalence_all_replicates: bool = False, alpha: float = 0.05,
) -> ClusterBootstrap:
    """Point AUROC/AUPRC/prevalence with 95% percentile intervals from a cluster bootstrap.

    ``with_auprc=False`` skips the AUPRC interval (its replicates cost O(windows) each), leaving
    NaN bounds; the AUPRC point estimate is always computed. Prevalence is defined in a one-class
    replicate too, so ``prevalence_all_replicates=True`` takes its interval over every replicate;
    the default (two-class replicates only) is the method of the results published before it.
    ``alpha``: the two-sided level of the percentile intervals (0.05, or an expanded level).
    """
    s, y = _as_arrays(scores, labels)
    clusters = np.asarray(clusters).reshape(-1)
    pairs = cluster_pair_counts(s, y, clusters)
    counts = resample_cluster_counts(len(pairs.ids), replicates, seed)
    aurocs = replicate_aurocs(pairs, counts)
    kept = np.isfinite(aurocs)
    m = counts.astype(np.float64)
    prevalences = np.where(kept | prevalence_all_replicates, (m @ pairs.positives) / np.maximum(m @ (pairs.positives + pairs.negatives), 1), np.nan)
    if with_auprc and kept.any():
        auprcs = np.full(replicates, np.nan)
        auprcs[kept] = replicate_auprcs(s, y, clusters, counts[kept])
        auprc_low, auprc_high = _interval(auprcs, alpha)
    else:
        auprc_low = auprc_high = float("nan")
    low, high = _interval(aurocs, alpha)
    prev_low, prev_high = _interval(prevalences, alpha)
    return ClusterBootstrap(
        auroc=auroc(s, y),
        ci_low=low,
        ci_high=high,
        replicate_values=aurocs,
        n_replicates=int(replicates),
        n_dropped=int((~kept).sum()),
        auprc=auprc(s, y),
        auprc_ci_low=auprc_low,
        auprc_ci_high=auprc_high,
        prevalence=float(y.mean()) if len(y) else float("nan"),
        prevalence_ci_low=prev_low,
        prevalence_ci_high=prev_high,
        n_windows=int(len(s)),
        n_positive=int(y.sum()),
        n_clusters=int(len(pairs.ids)),
        seed=int(seed),
        prevalence_kept=int(np.isfinite(prevalences).sum()),
    )
