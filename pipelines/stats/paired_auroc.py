"""Paired AUROC difference of two scorers on the same windows, by a cluster bootstrap over subjects.

One implementation for both places that publish such a difference: ``/v1/compare`` (api/compare.py,
on request) and the ``baseline_comparisons`` table (pipelines/engine/baseline.py, at publish time),
so a result page's "versus MAP alone" and a comparison of the same two runs are the same numbers.
Replicate r takes the subjects ``default_rng(seed).integers(0, C, size=(R, C))[r]`` and all their
windows for both scorers at once; one-class replicates have no AUROC and are left out (counted).
The interval is the 2.5th/97.5th percentile of the kept differences; the p-value is the two-sided
bootstrap p-value ``min(1, 2 min((1 + #{d <= 0}), (1 + #{d >= 0})) / (1 + R))``, whose floor is
2 / (R + 1): no smaller p can be shown, however large the difference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipelines.stats.auroc import cluster_pair_counts, replicate_aurocs, resample_cluster_counts

METHOD = "cluster-bootstrap-percentile"


@dataclass(frozen=True)
class PairedAuroc:
    value_a: float
    value_b: float
    difference: float  # value_a - value_b
    ci_low: float
    ci_high: float
    p_value: float
    n_clusters: int
    dropped: int  # one-class replicates left out


def bootstrap_p_value(differences: np.ndarray) -> float:
    """Two-sided bootstrap p-value matching the percentile interval (NaN without replicates)."""
    d = np.asarray(differences, dtype=np.float64)
    r = len(d)
    if r == 0:
        return float("nan")
    below = (1 + int((d <= 0).sum())) / (1 + r)
    above = (1 + int((d >= 0).sum())) / (1 + r)
    return float(min(1.0, 2 * min(below, above)))


def paired_auroc_difference(scores_a, scores_b, labels, clusters, replicates: int, seed: int) -> PairedAuroc | None:
    """The paired difference, or None when every replicate held one class only."""
    y = np.asarray(labels).reshape(-1).astype(bool)
    pairs_a = cluster_pair_counts(scores_a, y, clusters)
    pairs_b = cluster_pair_counts(scores_b, y, clusters)
    n_clusters = len(pairs_a.ids)
    whole = np.ones((1, n_clusters), dtype=np.int32)
    value_a, value_b = float(replicate_aurocs(pairs_a, whole)[0]), float(replicate_aurocs(pairs_b, whole)[0])
    counts = resample_cluster_counts(n_clusters, replicates, seed)
    diffs = replicate_aurocs(pairs_a, counts) - replicate_aurocs(pairs_b, counts)
    kept = diffs[np.isfinite(diffs)]
    if len(kept) == 0:
        return None
    low, high = np.percentile(kept, [2.5, 97.5])
    return PairedAuroc(value_a, value_b, value_a - value_b, float(low), float(high), bootstrap_p_value(kept),
                       n_clusters, int(len(diffs) - len(kept)))
