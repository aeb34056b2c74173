"""The validation fits refit inside every cluster-bootstrap replicate (docs/statistics.md, "Fair
calibration and thresholds from validation").

A risk score's probabilities come from a logistic recalibration ``sigmoid(a + b x)`` fitted on the
validation split (x the raw score of a rule, or logit p of a trained model), and its alarm-rate
thresholds are chosen on the validation windows too. Fitted once, the map and the thresholds are
constants to the test bootstrap, so the intervals of every metric that reads them are conditional
on them, though they rest on a handful of validation subjects. Here each replicate also resamples
the validation subjects (draws of their own, ``validation_counts``), refits the map and re-chooses
the thresholds on that resample, and applies them to its own resampled test windows: the map's and
the thresholds' uncertainty enters the intervals. The point estimates stay those of the fits on the
full validation split.

Every replicate's map is the weighted Newton fit of ``medbench.stats.calibration`` (a window's
weight = its subject's multiplicity), all replicates at once in batches; a replicate whose
resampled validation windows hold one class (or whose fit does not converge) has no map, and the
metrics that read it are undefined there (left out of their intervals, ``replicates_kept``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from medbench.stats.calibration import EPS, fit_logistic, fit_logistic_rows, logit, sigmoid

_BATCH_ELEMENTS = 4_000_000
VALIDATION_STREAM = 1  # the validation draws: default_rng([seed, 1]), apart from the test draws of default_rng(seed)


def validation_counts(n_clusters: int, replicates: int, seed: int) -> np.ndarray:
    """int32 [replicates, n_clusters]: each validation subject's multiplicity in each replicate, row r
    counting ``default_rng([seed, VALIDATION_STREAM]).integers(0, n_clusters, (replicates, n_clusters))[r]``."""
    draws = np.random.default_rng([seed, VALIDATION_STREAM]).integers(0, n_clusters, size=(replicates, n_clusters))
    flat = draws + (np.arange(replicates, dtype=np.int64) * n_clusters)[:, None]
    return np.bincount(flat.reshape(-1), minlength=replicates * n_clusters).reshape(replicates, n_clusters) \
        .astype(np.int32)


def weighted_alarm_thresholds(scores, clusters: np.ndarray, counts: np.ndarray, rate: float) -> np.ndarray:
    """float64 [R]: in each replicate (rows of ``counts`` [R, C]), the highest distinct score whose
    alarm set (score >= it) holds at least ``rate`` of the windows, a window weighted by its
    cluster's multiplicity (``medbench.stats.decision.alarm_threshold`` with weights)."""
    s = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-s, kind="mergesort")
    sorted_s, c_sorted = s[order], np.asarray(clusters)[order]
    ends = np.r_[np.flatnonzero(np.diff(sorted_s) != 0), len(s) - 1]
    out = np.empty(len(counts))
    batch = max(1, _BATCH_ELEMENTS // max(len(s), 1))
    for r0 in range(0, len(counts), batch):
        cum = np.cumsum(counts[r0:r0 + batch].astype(np.float64)[:, c_sorted], axis=1)[:, ends]
        total = cum[:, -1:]
        at = np.argmax(cum >= rate * total - 1e-9 * total, axis=1)
        out[r0:r0 + len(cum)] = sorted_s[ends[at]]
    return out


@dataclass(frozen=True)
class ReplicateFits:
    """What each replicate refit on its resampled validation subjects, for the test windows.

    ``ab`` [R, 2]: replicate r's map (a, b), NaN where undefined; ``x``: each test window's map input
    (the raw score, or logit p); ``scores``: the test windows' scores the alarm thresholds apply to;
    ``thresholds``: {alarm rate: [R] thresholds}; ``maps_p``: the published probabilities themselves
    are the map's (a rule's), so its as-given Brier and calibration read the refit map too."""

    ab: np.ndarray
    x: np.ndarray
    scores: np.ndarray
    thresholds: dict[float, np.ndarray]
    maps_p: bool

    @property
    def defined(self) -> np.ndarray:
        return np.isfinite(self.ab).all(axis=1)

    def subset(self, replicates: np.ndarray, windows: np.ndarray) -> ReplicateFits:
        """The fits of some replicates (a boolean or index array over R) on some test windows."""
        return ReplicateFits(self.ab[replicates], self.x[windows], self.scores[windows],
                             {r: t[replicates] for r, t in self.thresholds.items()}, self.maps_p)


def refit(x_val, y_val, s_val, val_clusters: np.ndarray, val_counts: np.ndarray, x_test, s_test,
          alarm_rates=(), maps_p: bool = False) -> ReplicateFits:
    """Refit the map ``sigmoid(a + b x)`` of ``y_val`` on ``x_val`` and choose each alarm rate's
    threshold on ``s_val`` in every replicate of the validation subjects (``val_counts`` [R, Cv],
    ``val_clusters`` each validation window's index 0..Cv-1): the map by the weighted Newton fit,
    all replicates at once."""
    c = np.asarray(val_clusters, dtype=np.int64)
    ab = fit_logistic(np.asarray(x_val, dtype=np.float64), np.asarray(y_val), val_counts[:, c].astype(np.float64))
    thresholds = {float(r): weighted_alarm_thresholds(s_val, c, val_counts, float(r)) for r in alarm_rates}
    return ReplicateFits(ab, np.asarray(x_test, dtype=np.float64), np.asarray(s_test, dtype=np.float64),
                         thresholds, maps_p)


def recalibrated_replicates(fits: ReplicateFits, y, clusters: np.ndarray, counts: np.ndarray,
                            thresholds=()) -> dict:
    """Each replicate's metrics of the test probabilities its own map gives: ``brier``,
    ``calibration_intercept``, ``calibration_slope`` ([R] each) and ``confusion`` {t: [4, R]} at each
    probability threshold; NaN (or zero counts) where the replicate has no map."""
    y = np.asarray(y, dtype=np.float64)
    c = np.asarray(clusters, dtype=np.int64)
    n_rep = len(counts)
    out = {"brier": np.full(n_rep, np.nan), "calibration_intercept": np.full(n_rep, np.nan),
           "calibration_slope": np.full(n_rep, np.nan), "confusion": {t: np.zeros((4, n_rep)) for t in thresholds}}
    ok = np.flatnonzero(fits.defined)
    batch = max(1, _BATCH_ELEMENTS // max(len(y), 1))
    for k in range(0, len(ok), batch):
        rows = ok[k:k + batch]
        w = counts[rows][:, c].astype(np.float64)
        q = sigmoid(fits.ab[rows, :1] + fits.ab[rows, 1:] * fits.x[None, :])
        with np.errstate(invalid="ignore", divide="ignore"):
            out["brier"][rows] = (w * (q - y) ** 2).sum(axis=1) / w.sum(axis=1)
        z = logit(np.clip(q, EPS, 1 - EPS))
        out["calibration_intercept"][rows] = fit_logistic_rows(z, y, w, offset=True)[:, 0]
        out["calibration_slope"][rows] = fit_logistic_rows(z, y, w)[:, 1]
        for t in thresholds:
            out["confusion"][t][:, rows] = _confusion(q >= t, y, w)
    return out


def alarm_confusion(fits: ReplicateFits, rate: float, y, clusters: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """float64 [4, R]: each replicate's TP, FP, FN, TN on its resampled test windows at the
    threshold it chose for ``rate`` on its resampled validation windows."""
    y = np.asarray(y, dtype=np.float64)
    c = np.asarray(clusters, dtype=np.int64)
    t = fits.thresholds[float(rate)]
    out = np.empty((4, len(counts)))
    batch = max(1, _BATCH_ELEMENTS // max(len(y), 1))
    for r0 in range(0, len(counts), batch):
        w = counts[r0:r0 + batch][:, c].astype(np.float64)
        out[:, r0:r0 + len(w)] = _confusion(fits.scores[None, :] >= t[r0:r0 + batch, None], y, w)
    return out


def _confusion(alarm: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """[4, B]: weighted TP, FP, FN, TN of alarms [B, n] against labels y [n] (weights w [B, n])."""
    wa = w * alarm
    tp, alarmed, positives, total = wa @ y, wa.sum(axis=1), w @ y, w.sum(axis=1)
    return np.stack([tp, alarmed - tp, positives - tp, total - positives - alarmed + tp])
