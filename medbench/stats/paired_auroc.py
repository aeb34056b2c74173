"""Paired AUROC difference of two scorers on the same windows, by a cluster bootstrap over subjects.

One implementation for both places that publish such a difference: ``/v1/compare`` (api/compare.py,
on request) and the ``baseline_comparisons`` table (pipelines/engine/reference_model.py, at publish time),
so a result page's "versus MAP alone" and a comparison of the same two runs are the same numbers.
Replicate r takes the subjects ``default_rng(seed).integers(0, C, size=(R, C))[r]`` and all their
windows for both scorers at once; one-class replicates have no AUROC and are left out (counted).

The interval is the 2.5th/97.5th percentile of the kept differences (numpy's default, linear
interpolation). The p-value is that interval *inverted* (``percentile_test``): the smallest
two-sided level alpha at which the percentile interval ``[Q(alpha/2), Q(1 - alpha/2)]`` of the same
kept differences leaves 0 out. So ``p < 0.05`` exactly when the published interval excludes 0, and
the same holds at every level; a count-based bootstrap p-value next to an interpolated percentile
interval can disagree at the boundary (25 of 1,000 differences <= 0: interval above 0, p = 0.052).
Inverting the interval rather than replacing it keeps every published interval as it was.

Floor: with R kept replicates the tails beyond the outermost ones are not resolved, so no p below
2 / (R + 1) is reported (Davison and Hinkley's floor); a p at the floor is flagged ``p_at_floor``
and reads "p <= 2/(R+1)", never as an exact value. With R <= 39 the floor is at least 0.05, so an
interval that excludes 0 gets p just below 0.05, still flagged ``p_at_floor`` (a bound, not a value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from medbench.stats.auroc import cluster_pair_counts, replicate_aurocs, resample_cluster_counts

METHOD = "cluster-bootstrap-percentile"
ALPHA = 0.05  # two-sided: the 95% interval


@dataclass(frozen=True)
class PercentileTest:
    """The percentile interval of bootstrap differences and the p-value that inverts it."""

    ci_low: float
    ci_high: float
    p_value: float
    p_at_floor: bool  # p is the floor 2/(R+1): the true p is at most this


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
    p_at_floor: bool = False


def _last_level_at_or_below_zero(x: np.ndarray) -> float:
    """sup {a in [0, 1] : Q(a) <= 0} for sorted ``x``, Q the linear-interpolation quantile function.

    Q(a) sits at the virtual index h = a (n - 1); with k = #{x <= 0} it crosses 0 inside the
    segment [x[k-1], x[k]], at h = (k - 1) + (0 - x[k-1]) / (x[k] - x[k-1])."""
    n = len(x)
    k = int(np.searchsorted(x, 0.0, side="right"))  # #{x <= 0}
    if k == 0:
        return 0.0
    if k == n:
        return 1.0
    h = (k - 1) + float(-x[k - 1]) / float(x[k] - x[k - 1])
    return h / (n - 1)


def inverted_p_value(differences) -> float:
    """The smallest two-sided level at which the percentile interval excludes 0 (no floor); NaN
    without replicates. 0 when every difference lies on one side of 0."""
    x = np.sort(np.asarray(differences, dtype=np.float64))
    if len(x) == 0:
        return float("nan")
    if len(x) == 1:
        return 0.0 if x[0] != 0 else 1.0
    below = _last_level_at_or_below_zero(x)  # the lower limit Q(alpha/2) > 0 once alpha/2 > below
    above = _last_level_at_or_below_zero(-x[::-1])  # the upper limit Q(1 - alpha/2) < 0, mirrored
    return float(min(1.0, 2 * min(below, above)))


def percentile_test(differences, alpha: float = ALPHA) -> PercentileTest:
    """The ``1 - alpha`` percentile interval of ``differences`` and its inverted, floored p-value.

    The last step guards rounding only: the p computed in closed form and np.percentile's own
    interpolation could land on different sides of ``alpha`` by one ulp; the published pair is then
    made to agree with the published interval, which is the one readers see."""
    d = np.asarray(differences, dtype=np.float64)
    if len(d) == 0:
        return PercentileTest(float("nan"), float("nan"), float("nan"), False)
    low, high = (float(v) for v in np.percentile(d, [50 * alpha, 100 - 50 * alpha]))
    floor = 2 / (len(d) + 1)
    raw = inverted_p_value(d)
    p, at_floor = (floor, True) if raw <= floor else (raw, False)
    excludes = low > 0 or high < 0
    if excludes and p >= alpha:
        # with 39 or fewer kept replicates the floor itself is >= alpha: the p shown is then a bound
        # too (the replicates cannot resolve it), so it stays flagged
        p = float(np.nextafter(alpha, 0.0))
    elif not excludes and p < alpha:
        p, at_floor = alpha, False
    return PercentileTest(low, high, p, at_floor)


def bootstrap_p_value(differences) -> float:
    """The two-sided p-value published with the percentile interval (``percentile_test``)."""
    return percentile_test(differences).p_value


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
    t = percentile_test(kept)
    return PairedAuroc(value_a, value_b, value_a - value_b, t.ci_low, t.ci_high, t.p_value,
                       n_clusters, int(len(diffs) - len(kept)), t.p_at_floor)
