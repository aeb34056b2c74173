"""Calibration of predicted probabilities: Brier score, calibration intercept and slope, a binned
calibration curve, and the logistic recalibration that maps a non-probability score to one.

Why these (Van Calster et al., BMC Med 2019; TRIPOD+AI, BMJ 2024): discrimination (AUROC) says
nothing of whether a predicted 20% means 20%. With ``z = logit(p)``:

- calibration intercept ("calibration-in-the-large") ``alpha`` in ``logit P(y=1) = alpha + z``,
  ``z`` an offset (target 0: negative means the predictions are too high on average);
- calibration slope ``beta`` in ``logit P(y=1) = a + beta * z`` (target 1: below 1 the
  predictions are too extreme, above 1 too modest);
- Brier score ``mean((p - y)^2)`` (lower is better).

Both logistic fits are maximum likelihood by Newton's method (IRLS), in numpy, with weights, so
the same code fits the point estimate (weight 1) and every cluster-bootstrap replicate (weight of
a window = the multiplicity of its cluster in that replicate, exactly what refitting on the
resampled windows gives). Replicates are fitted together, in batches, so memory stays bounded.
Probabilities are clipped to [1e-9, 1 - 1e-9] before the logit, so a score of exactly 0 or 1
has a finite logit.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-9
_ITERATIONS = 100
_TOL = 1e-10
_BATCH_ELEMENTS = 4_000_000


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=np.float64)))


def logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(np.asarray(p, dtype=np.float64), EPS, 1.0 - EPS)
    return np.log(q) - np.log1p(-q)


def brier(p, y, w=None) -> float:
    p, y = np.asarray(p, dtype=np.float64), np.asarray(y, dtype=np.float64)
    w = np.ones_like(p) if w is None else np.asarray(w, dtype=np.float64)
    return float((w * (p - y) ** 2).sum() / w.sum()) if w.sum() > 0 else float("nan")


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None,
                 offset: bool = False) -> np.ndarray:
    """Weighted logistic regression of ``y`` on ``x``, one fit per row of ``w``.

    ``offset=False``: ``logit P = a + b x``, returns float64 [R, 2] (a, b). ``offset=True``:
    ``logit P = a + x`` (x an offset), returns [R, 1] (a). ``w`` is [R, n] (None: one fit with
    weight 1). A fit that does not converge (e.g. complete separation, or one class only) is NaN.
    ``x`` is standardised inside the slope fit, so raw scores on any scale (minus a MAP in mmHg)
    fit as stably as logits.
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    w = np.ones((1, len(x))) if w is None else np.atleast_2d(np.asarray(w, dtype=np.float64))
    out = np.empty((len(w), 1 if offset else 2))
    batch = max(1, _BATCH_ELEMENTS // max(len(x), 1))
    for r0 in range(0, len(w), batch):
        rows = w[r0:r0 + batch]
        out[r0:r0 + len(rows)] = _fit_intercept(x, y, rows) if offset else _fit_line(x, y, rows)
    return out


def fit_logistic_rows(x: np.ndarray, y: np.ndarray, w: np.ndarray, offset: bool = False) -> np.ndarray:
    """``fit_logistic`` with a regressor of its own in every fit: ``x`` and ``w`` are both [R, n]
    (row r fits ``y`` on ``x[r]`` with weights ``w[r]``), e.g. the logits of probabilities that a
    recalibration map refit in each bootstrap replicate gives (``medbench.stats.refit``). Same
    model, Newton steps and NaN rules as ``fit_logistic``; each fit starts at a = 0 (offset) or at the
    identity map a = 0, b = 1, near which the logits of recalibrated probabilities lie."""
    x, w = np.atleast_2d(np.asarray(x, dtype=np.float64)), np.atleast_2d(np.asarray(w, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    out = np.empty((len(w), 1 if offset else 2))
    batch = max(1, _BATCH_ELEMENTS // max(x.shape[1], 1))
    for r0 in range(0, len(w), batch):
        rows, xs = w[r0:r0 + batch], x[r0:r0 + batch]
        out[r0:r0 + len(rows)] = _fit_intercept(xs, y, rows) if offset else _fit_line(xs, y, rows)
    return out


def _rows(x: np.ndarray, active: np.ndarray) -> np.ndarray:
    """The regressor of the active fits: one shared 1-d ``x``, or each fit's own row of a 2-d one."""
    return x[None, :] if x.ndim == 1 else x[active]


def _dot(m: np.ndarray, z: np.ndarray, active: np.ndarray) -> np.ndarray:
    return m @ z if z.ndim == 1 else (m * z[active]).sum(axis=1)


def _fit_intercept(x, y, w) -> np.ndarray:
    # start every replicate at the unweighted fit: replicates are near it, so Newton needs few steps
    # (each fit's own regressor: at 0, the start of a calibrated model's intercept)
    a = np.full(len(w), _newton_intercept(x, y, np.ones((1, len(x))), np.zeros(1))[0][0]) if x.ndim == 1 \
        else np.zeros(len(w))
    a, failed = _newton_intercept(x, y, w, a)
    return _undefined(a[:, None], w, y, failed)


def _newton_intercept(x, y, w, a) -> tuple[np.ndarray, np.ndarray]:
    a = a.copy()
    active = np.arange(len(w))
    for _ in range(_ITERATIONS):
        wa = w[active]
        p = sigmoid(a[active, None] + _rows(x, active))
        grad = (wa * (y - p)).sum(axis=1)
        hess = (wa * p * (1 - p)).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            step = np.where(hess > 0, grad / hess, np.nan)
        a[active] += np.clip(step, -5, 5)
        active = active[np.abs(step) > _TOL]  # NaN steps leave too (and are NaN in a)
        if not len(active):
            break
    return a, np.isin(np.arange(len(w)), active) | ~np.isfinite(a)


def _fit_line(x, y, w) -> np.ndarray:
    if x.ndim == 2:  # each fit its own regressor, standardised row by row, Newton from the identity
        mu, sd = x.mean(axis=1), x.std(axis=1)  # map a = 0, b = 1 (the rows are logits near calibration)
        sd = np.where(sd > 0, sd, 1.0)
        z = (x - mu[:, None]) / sd[:, None]
        beta, failed = _newton_line(z, y, w, np.stack([mu, sd], axis=1))
        if failed.any():  # far from the identity Newton can overshoot: those fits again from 0
            again = np.flatnonzero(failed)
            beta[again], failed[again] = _newton_line(z[again], y, w[again], np.zeros((len(again), 2)))
        b = beta[:, 1] / sd
        return _undefined(np.stack([beta[:, 0] - b * mu, b], axis=1), w, y, failed)
    mu, sd = x.mean(), x.std()
    sd = sd if sd > 0 else 1.0
    z = (x - mu) / sd
    start = _newton_line(z, y, np.ones((1, len(z))), np.zeros((1, 2)))[0][0]
    beta, failed = _newton_line(z, y, w, np.tile(start, (len(w), 1)))
    b = beta[:, 1] / sd
    a = beta[:, 0] - b * mu
    return _undefined(np.stack([a, b], axis=1), w, y, failed)


def _newton_line(z, y, w, beta) -> tuple[np.ndarray, np.ndarray]:
    beta = beta.copy()
    active = np.arange(len(w))
    for _ in range(_ITERATIONS):
        wa = w[active]
        p = sigmoid(beta[active, :1] + beta[active, 1:] * _rows(z, active))
        r, v = wa * (y - p), wa * p * (1 - p)
        g0, g1 = r.sum(axis=1), _dot(r, z, active)
        h00, h01, h11 = v.sum(axis=1), _dot(v, z, active), _dot(v, z * z, active)
        det = h00 * h11 - h01 * h01
        with np.errstate(invalid="ignore", divide="ignore"):
            s0 = np.where(det > 0, (h11 * g0 - h01 * g1) / det, np.nan)
            s1 = np.where(det > 0, (h00 * g1 - h01 * g0) / det, np.nan)
        step = np.clip(np.stack([s0, s1], axis=1), -5, 5)
        beta[active] += step
        active = active[np.abs(step).max(axis=1) > _TOL]
        if not len(active):
            break
    failed = np.isin(np.arange(len(w)), active) | ~np.isfinite(beta).all(axis=1)
    return beta, failed


def _undefined(params: np.ndarray, w: np.ndarray, y: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """NaN where the fit failed or the weighted windows hold one class only (no finite MLE)."""
    positives = (w * y).sum(axis=1)
    one_class = (positives <= 0) | (positives >= w.sum(axis=1))
    return np.where((failed | one_class)[:, None], np.nan, params)


def calibration_intercept(p, y, w=None) -> np.ndarray:
    """alpha of ``logit P(y=1) = alpha + logit p`` per row of ``w`` (target 0)."""
    return fit_logistic(logit(p), y, w, offset=True)[:, 0]


def calibration_slope(p, y, w=None) -> np.ndarray:
    """beta of ``logit P(y=1) = a + beta logit p`` per row of ``w`` (target 1)."""
    return fit_logistic(logit(p), y, w)[:, 1]


class Recalibration:
    """``p = sigmoid(a + b * score)``, fitted on the validation split (scores that are not probabilities)."""

    def __init__(self, a: float, b: float, n: int) -> None:
        self.a, self.b, self.n = float(a), float(b), int(n)

    @classmethod
    def fit(cls, scores, labels) -> Recalibration:
        s = np.asarray(scores, dtype=np.float64)
        y = np.asarray(labels).astype(np.float64)
        if not len(s) or y.min() == y.max():
            raise ValueError("the validation split needs both classes to fit the logistic recalibration")
        a, b = fit_logistic(s, y)[0]
        if not np.isfinite([a, b]).all():
            raise ValueError("the logistic recalibration on the validation split did not converge")
        return cls(a, b, len(s))

    def apply(self, scores) -> np.ndarray:
        return sigmoid(self.a + self.b * np.asarray(scores, dtype=np.float64))

    def as_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "n_validation_windows": self.n, "fitted_on": "validation"}

    @classmethod
    def from_dict(cls, d: dict) -> Recalibration:
        return cls(d["a"], d["b"], d.get("n_validation_windows", 0))


def quantile_bins(p: np.ndarray, n_bins: int = 10) -> np.ndarray:
    """Bin index (0..k-1) of each prediction: ``n_bins`` bins at the quantiles of p (ties kept together)."""
    p = np.asarray(p, dtype=np.float64)
    edges = np.unique(np.quantile(p, np.linspace(0, 1, n_bins + 1)[1:-1])) if len(p) else np.zeros(0)
    return np.searchsorted(edges, p, side="right")
