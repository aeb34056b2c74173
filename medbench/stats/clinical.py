"""The clinical report of a risk score (TRIPOD+AI): Brier score, calibration intercept and slope,
operating points at fixed thresholds and alarm rates, net benefit against treat-all, each with a
cluster-bootstrap percentile interval from the *same* replicate draws as the AUROC's
(``counts`` = ``resample_cluster_counts(C, replicates, seed)``); plus the calibration curve
and the decision curve the result page draws.

Every metric row says its direction: ``higher`` is better, ``lower`` is better (Brier), or
``target`` (calibration intercept 0, slope 1). A replicate in which a metric is undefined (one
class only, or no alarm for a PPV) is left out of that metric's interval only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from medbench.stats.calibration import brier, calibration_intercept, calibration_slope, quantile_bins
from medbench.stats.decision import (alarm_rate_confusion, cluster_confusion, net_benefit, rates, treat_all)
from medbench.stats.intervals import percentile_interval
from medbench.stats.refit import ReplicateFits, alarm_confusion, recalibrated_replicates

_BATCH_ELEMENTS = 4_000_000
DECISION_GRID = tuple(round(0.01 * k, 2) for k in range(1, 61))  # thresholds the decision curve draws


@dataclass(frozen=True)
class MetricRow:
    name: str
    value: float
    ci_low: float
    ci_high: float
    direction: str = "higher"  # higher | lower | target
    target: float | None = None
    uses_probabilities: bool = True  # False: rank-based (alarm rates), calibration does not enter
    replicates_kept: int | None = None  # replicates where the metric is defined (its interval's)


@dataclass(frozen=True)
class ClinicalReport:
    metrics: list[MetricRow]
    calibration_curve: dict = field(default_factory=dict)  # predicted, observed, n, observed_low/high per bin
    decision_curve: dict = field(default_factory=dict)  # thresholds, model, treat_all (treat-none is 0)


def _row(name: str, value, replicates, alpha: float = 0.05, **kw) -> MetricRow:
    low, high = percentile_interval(replicates, alpha)
    kept = int(np.isfinite(np.asarray(replicates, dtype=np.float64)).sum())
    return MetricRow(name, float(value), low, high, replicates_kept=kept, **kw)


def threshold_name(metric: str, t: float) -> str:
    return f"{metric}[t={t:g}]"


def alarm_name(metric: str, r: float) -> str:
    return f"{metric}[alarm={r:g}]"


def clinical_report(p, y, clusters, counts: np.ndarray, thresholds=(), alarm_rates=(), scores=None,
                    curves: bool = True, n_bins: int = 10, alpha: float = 0.05, decision_p=None,
                    alarm_thresholds: dict | None = None, refit: ReplicateFits | None = None) -> ClinicalReport:
    """The report for probabilities ``p`` (scores for alarm rates default to ``p``) and labels ``y``.

    ``clusters`` is each window's index 0..C-1 into the columns of ``counts`` [R, C]; ``alpha`` is
    the two-sided level of every percentile interval (0.05, or the expanded level of
    ``medbench.stats.intervals``). ``decision_p``: the probabilities the threshold metrics, net
    benefit and the decision curve read (the recalibrated ones; default ``p``), and
    ``recalibrated`` rows (``brier_recalibrated``, ...) from them when they differ from ``p``.
    ``alarm_thresholds`` ({rate: score threshold} chosen on validation): each alarm rate's operating
    point at that fixed threshold, with ``alarm_rate[alarm=r]``, the rate achieved on these windows;
    without it the threshold is found in each replicate (the method of results before).
    ``refit`` (``medbench.stats.refit``, rows aligned with ``counts``): the replicates of every
    metric that reads ``decision_p`` (and, where ``refit.maps_p``, of those that read ``p``) come from
    the map each replicate refit on its resampled validation subjects, and each alarm rate's from
    the threshold it re-chose there; the point estimates stay those of ``decision_p`` and
    ``alarm_thresholds``. Without it they are conditional on the map and thresholds as fitted.
    """
    p = np.asarray(p, dtype=np.float64)
    q = p if decision_p is None else np.asarray(decision_p, dtype=np.float64)
    y = np.asarray(y).astype(np.int8)
    s = p if scores is None else np.asarray(scores, dtype=np.float64)
    c = np.asarray(clusters, dtype=np.int64)
    n_clusters = counts.shape[1]
    sizes = np.bincount(c, minlength=n_clusters).astype(np.float64)
    sq = np.bincount(c, weights=(p - y) ** 2, minlength=n_clusters)
    m = counts.astype(np.float64)
    refits = recalibrated_replicates(refit, y, c, counts, thresholds) if refit is not None else None
    if refits is not None and refit.maps_p:
        brier_reps, intercept_reps, slope_reps = (refits[k] for k in ("brier", "calibration_intercept",
                                                                         "calibration_slope"))
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            brier_reps = (m @ sq) / (m @ sizes)
        intercept_reps = _per_replicate(calibration_intercept, p, y, c, counts)
        slope_reps = _per_replicate(calibration_slope, p, y, c, counts)
    rows = [
        _row("brier", brier(p, y), brier_reps, direction="lower", alpha=alpha),
        _row("calibration_intercept", calibration_intercept(p, y)[0], intercept_reps,
             direction="target", target=0.0, alpha=alpha),
        _row("calibration_slope", calibration_slope(p, y)[0], slope_reps, direction="target", target=1.0, alpha=alpha),
    ]
    if decision_p is not None:
        if refits is not None:
            q_brier, q_intercept, q_slope = (refits[k] for k in ("brier", "calibration_intercept", "calibration_slope"))
        else:
            sq_q = np.bincount(c, weights=(q - y) ** 2, minlength=n_clusters)
            with np.errstate(invalid="ignore", divide="ignore"):
                q_brier = (m @ sq_q) / (m @ sizes)
            q_intercept = _per_replicate(calibration_intercept, q, y, c, counts)
            q_slope = _per_replicate(calibration_slope, q, y, c, counts)
        rows += [
            _row("brier_recalibrated", brier(q, y), q_brier, direction="lower", alpha=alpha),
            _row("calibration_intercept_recalibrated", calibration_intercept(q, y)[0], q_intercept,
                 direction="target", target=0.0, alpha=alpha),
            _row("calibration_slope_recalibrated", calibration_slope(q, y)[0], q_slope,
                 direction="target", target=1.0, alpha=alpha),
        ]
    positives = np.bincount(c, weights=y, minlength=n_clusters)
    with np.errstate(invalid="ignore", divide="ignore"):
        prevalence_reps = (m @ positives) / (m @ sizes)
    for t in thresholds:
        conf = cluster_confusion(q, y, c, n_clusters, t)
        rep_conf = refits["confusion"][t] if refits is not None else conf @ m.T
        point, reps = rates(conf.sum(axis=1)), rates(rep_conf)
        for name in ("sensitivity", "specificity", "ppv", "npv"):
            rows.append(_row(threshold_name(name, t), point[name], reps[name], alpha))
        rows.append(_row(threshold_name("net_benefit", t), net_benefit(conf.sum(axis=1), t), net_benefit(rep_conf, t), alpha))
        rows.append(_row(threshold_name("net_benefit_treat_all", t), treat_all(y.mean(), t),
                         treat_all(prevalence_reps, t), alpha))
    ones = np.ones((1, n_clusters), dtype=np.int64)
    for r in alarm_rates:
        fixed = (alarm_thresholds or {}).get(r)
        if fixed is not None:  # the validation split's threshold, applied to these windows
            conf = cluster_confusion(s, y, c, n_clusters, fixed)
            point_conf = conf.sum(axis=1)
            rep_conf = (alarm_confusion(refit, r, y, c, counts) if refit is not None and float(r) in refit.thresholds
                        else conf @ m.T)
            with np.errstate(invalid="ignore", divide="ignore"):
                achieved = (rep_conf[0] + rep_conf[1]) / rep_conf.sum(axis=0)
            rows.append(_row(alarm_name("alarm_rate", r), (point_conf[0] + point_conf[1]) / point_conf.sum(), achieved,
                             alpha, direction="target", target=float(r), uses_probabilities=False))
        else:
            point_conf, rep_conf = alarm_rate_confusion(s, y, c, ones, r)[:, 0], alarm_rate_confusion(s, y, c, counts, r)
        point, reps = rates(point_conf), rates(rep_conf)
        for name in ("sensitivity", "specificity", "ppv", "npv"):
            rows.append(_row(alarm_name(name, r), point[name], reps[name], alpha, uses_probabilities=False))
    if not curves:
        return ClinicalReport(rows)
    return ClinicalReport(rows, calibration_curve(p, y, c, m, n_bins, alpha), decision_curve(q, y))


def _per_replicate(fit, p, y, c, counts: np.ndarray) -> np.ndarray:
    """``fit(p, y, w)`` for every replicate, the window weights built a batch of replicates at a time."""
    out = np.empty(len(counts))
    batch = max(1, _BATCH_ELEMENTS // max(len(p), 1))
    for r0 in range(0, len(counts), batch):
        out[r0:r0 + batch] = fit(p, y, counts[r0:r0 + batch][:, c].astype(np.float64))
    return out


def calibration_curve(p, y, c, m: np.ndarray, n_bins: int = 10, alpha: float = 0.05) -> dict:
    """Quantile bins of p: mean predicted, observed rate (with its cluster-bootstrap interval), windows."""
    bins = quantile_bins(p, n_bins)
    out: dict[str, list] = {"predicted": [], "observed": [], "observed_low": [], "observed_high": [], "n": []}
    n_clusters = m.shape[1]
    for b in np.unique(bins):
        mine = bins == b
        size = np.bincount(c[mine], minlength=n_clusters).astype(np.float64)
        pos = np.bincount(c[mine], weights=y[mine], minlength=n_clusters)
        with np.errstate(invalid="ignore", divide="ignore"):
            low, high = percentile_interval((m @ pos) / (m @ size), alpha)
        out["predicted"].append(round(float(p[mine].mean()), 6))
        out["observed"].append(round(float(y[mine].mean()), 6))
        out["observed_low"].append(round(low, 6))
        out["observed_high"].append(round(high, 6))
        out["n"].append(int(mine.sum()))
    return out


def decision_curve(p, y, grid=DECISION_GRID) -> dict:
    """Net benefit of the model and of treat-all on a grid of thresholds (treat-none is 0 throughout)."""
    n = len(p)
    model, everyone = [], []
    for t in grid:
        alarm = p >= t
        tp, fp = float((alarm & (y == 1)).sum()), float((alarm & (y == 0)).sum())
        model.append(round((tp - fp * t / (1 - t)) / n, 6))
        everyone.append(round(float(treat_all(y.mean(), t)), 6))
    return {"thresholds": list(grid), "model": model, "treat_all": everyone}
