"""Operating points and net benefit of a risk score, for a point estimate and for every
cluster-bootstrap replicate at once.

At a probability threshold t a window alarms when ``p >= t``. The four counts (TP, FP, FN, TN)
are sums over windows, so per cluster they are fixed and a replicate that takes cluster i m[i]
times has counts ``m @ counts_per_cluster``: no replicate revisits a window (as for AUROC in
``medbench.stats.auroc``). From them: sensitivity TP/(TP+FN), specificity TN/(TN+FP), PPV
TP/(TP+FP), NPV TN/(TN+FN) (NaN where the denominator is 0), and net benefit (Vickers and Elkin,
Med Decis Making 2006)

    NB(t) = TP/N - FP/N * t/(1-t);   treat-all: pi - (1-pi) * t/(1-t);   treat-none: 0.

At an alarm rate r the threshold is the score's own: the highest distinct score whose alarm set
(score >= it) holds at least a fraction r of the windows; in a replicate the fraction is counted
with the replicate's weights, so the threshold moves with the resample (the interval includes the
threshold's uncertainty). It does not depend on calibration.
"""

from __future__ import annotations

import numpy as np

_BATCH_ELEMENTS = 4_000_000
TP, FP, FN, TN = range(4)


def cluster_confusion(p, y, clusters: np.ndarray, n_clusters: int, threshold: float) -> np.ndarray:
    """float64 [4, C]: TP, FP, FN, TN of each cluster (``clusters`` = index 0..C-1 per window) at ``p >= threshold``."""
    alarm = np.asarray(p, dtype=np.float64) >= threshold
    y = np.asarray(y).astype(bool)
    out = np.empty((4, n_clusters))
    for k, mask in ((TP, alarm & y), (FP, alarm & ~y), (FN, ~alarm & y), (TN, ~alarm & ~y)):
        out[k] = np.bincount(clusters, weights=mask, minlength=n_clusters)
    return out


def rates(conf: np.ndarray) -> dict[str, np.ndarray]:
    """Sensitivity, specificity, PPV, NPV from counts ``conf[4, ...]`` (NaN where undefined)."""
    def ratio(a, b):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(b > 0, a / np.where(b > 0, b, 1), np.nan)

    tp, fp, fn, tn = conf
    return {"sensitivity": ratio(tp, tp + fn), "specificity": ratio(tn, tn + fp),
            "ppv": ratio(tp, tp + fp), "npv": ratio(tn, tn + fn)}


def net_benefit(conf: np.ndarray, threshold: float) -> np.ndarray:
    tp, fp, fn, tn = conf
    n = tp + fp + fn + tn
    odds = threshold / (1.0 - threshold)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, (tp - fp * odds) / np.where(n > 0, n, 1), np.nan)


def treat_all(prevalence, threshold: float):
    """Net benefit of alarming on every window: pi - (1 - pi) t/(1-t)."""
    return prevalence - (1.0 - prevalence) * threshold / (1.0 - threshold)


def alarm_rate_confusion(scores, y, clusters: np.ndarray, counts: np.ndarray, rate: float) -> np.ndarray:
    """float64 [4, R]: the counts at alarm rate ``rate`` in each replicate (rows of ``counts`` [R, C])."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(y).astype(bool)
    order = np.argsort(-s, kind="mergesort")
    sorted_s = s[order]
    ends = np.r_[np.flatnonzero(np.diff(sorted_s) != 0), len(s) - 1]
    c_sorted, y_sorted = clusters[order], y[order]
    out = np.empty((4, len(counts)))
    batch = max(1, _BATCH_ELEMENTS // max(len(s), 1))
    for r0 in range(0, len(counts), batch):
        m = counts[r0:r0 + batch].astype(np.float64)
        w = m[:, c_sorted]
        cum = np.cumsum(w, axis=1)[:, ends]
        cum_pos = np.cumsum(w * y_sorted, axis=1)[:, ends]
        total, positives = cum[:, -1], cum_pos[:, -1]
        at = np.argmax(cum >= rate * total[:, None] - 1e-9 * total[:, None], axis=1)
        rows = np.arange(len(m))
        tp = cum_pos[rows, at]
        fp = cum[rows, at] - tp
        out[:, r0:r0 + len(m)] = [tp, fp, positives - tp, total - positives - fp]
    return out


def alarm_threshold(scores, rate: float) -> float:
    """The score threshold of alarm rate ``rate`` on all windows (weight 1 each)."""
    s = np.sort(np.asarray(scores, dtype=np.float64))[::-1]
    distinct = np.r_[np.flatnonzero(np.diff(s) != 0), len(s) - 1]
    at = int(np.argmax(distinct + 1 >= rate * len(s) - 1e-9 * len(s)))
    return float(s[distinct[at]])
