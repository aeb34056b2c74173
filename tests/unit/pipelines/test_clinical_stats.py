"""The clinical report's statistics against oracles computed another way: the calibration intercept
and slope against statsmodels' logistic GLM (the intercept with logit p as offset; a bootstrap
replicate as the GLM on the resampled windows themselves), Brier against scikit-learn, operating
points against scikit-learn's confusion matrix, net benefit against a direct count."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from sklearn.metrics import brier_score_loss, confusion_matrix

from medbench.stats.auroc import resample_cluster_counts, resample_cluster_draws
from medbench.stats.calibration import Recalibration, calibration_intercept, calibration_slope, logit
from medbench.stats.clinical import clinical_report
from medbench.stats.decision import alarm_threshold


def miscalibrated(n: int = 1500, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True risk sigmoid(-1 + 0.5 z); predicted sigmoid(z + 1): too high and too extreme."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-1.5, 1.6, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(-1.0 + 0.5 * z)))).astype(np.int8)
    p = 1 / (1 + np.exp(-(z + 1.0)))
    clusters = rng.integers(0, 60, n)
    return p, y, clusters


def glm(y, x=None, offset=None, weights=None):
    exog = np.ones((len(y), 1)) if x is None else sm.add_constant(x)
    return sm.GLM(y, exog, family=sm.families.Binomial(), offset=offset, freq_weights=weights).fit().params


def test_calibration_intercept_and_slope_match_statsmodels() -> None:
    p, y, _ = miscalibrated()
    z = logit(p)
    assert calibration_intercept(p, y)[0] == pytest.approx(glm(y, offset=z)[0], abs=1e-7)
    assert calibration_slope(p, y)[0] == pytest.approx(glm(y, x=z)[1], abs=1e-7)
    # and the data are miscalibrated the way they were made: slope near 0.5, intercept negative
    assert calibration_slope(p, y)[0] < 0.7 and calibration_intercept(p, y)[0] < -0.5


def test_a_replicate_is_the_fit_on_the_resampled_windows() -> None:
    """Weights = cluster multiplicities give exactly the GLM on the windows the replicate drew."""
    p, y, clusters = miscalibrated(600)
    _, c = np.unique(clusters, return_inverse=True)
    draws = resample_cluster_draws(int(c.max()) + 1, 3, 11)
    counts = resample_cluster_counts(int(c.max()) + 1, 3, 11)
    for r in range(3):
        rows = np.concatenate([np.flatnonzero(c == k) for k in draws[r]])
        w = counts[r][c][None, :].astype(float)
        assert calibration_slope(p, y, w)[0] == pytest.approx(glm(y[rows], x=logit(p[rows]))[1], abs=1e-7)
        assert calibration_intercept(p, y, w)[0] == pytest.approx(glm(y[rows], offset=logit(p[rows]))[0], abs=1e-7)


def test_recalibration_is_the_logistic_fit_of_the_raw_score() -> None:
    rng = np.random.default_rng(5)
    s = -rng.normal(80, 12, 2000)  # minus a MAP in mmHg: not a probability
    y = (rng.random(2000) < 1 / (1 + np.exp(-(0.15 * s + 10)))).astype(np.int8)
    fitted = Recalibration.fit(s, y)
    a, b = glm(y, x=s)
    assert (fitted.a, fitted.b) == (pytest.approx(a, rel=1e-6), pytest.approx(b, rel=1e-6))
    # recalibrated on the data it was fitted on, it is calibrated: intercept 0, slope 1
    q = fitted.apply(s)
    assert calibration_intercept(q, y)[0] == pytest.approx(0.0, abs=1e-6)
    assert calibration_slope(q, y)[0] == pytest.approx(1.0, abs=1e-6)


def report(thresholds=(0.1, 0.3), alarm_rates=(0.05, 0.2)):
    p, y, clusters = miscalibrated()
    _, c = np.unique(clusters, return_inverse=True)
    counts = resample_cluster_counts(int(c.max()) + 1, 200, 7)
    rep = clinical_report(p, y, c, counts, thresholds, alarm_rates)
    return p, y, {m.name: m for m in rep.metrics}, rep


def test_brier_operating_points_and_net_benefit_against_direct_computation() -> None:
    p, y, metrics, _ = report()
    assert metrics["brier"].value == pytest.approx(brier_score_loss(y, p), abs=1e-12)
    assert metrics["brier"].direction == "lower"
    assert metrics["calibration_slope"].direction == "target" and metrics["calibration_slope"].target == 1.0
    assert metrics["calibration_intercept"].target == 0.0
    for t in (0.1, 0.3):
        tn, fp, fn, tp = confusion_matrix(y, (p >= t).astype(int)).ravel()
        assert metrics[f"sensitivity[t={t:g}]"].value == pytest.approx(tp / (tp + fn))
        assert metrics[f"specificity[t={t:g}]"].value == pytest.approx(tn / (tn + fp))
        assert metrics[f"ppv[t={t:g}]"].value == pytest.approx(tp / (tp + fp))
        assert metrics[f"npv[t={t:g}]"].value == pytest.approx(tn / (tn + fn))
        alarmed = [i for i in range(len(p)) if p[i] >= t]
        n_tp = sum(1 for i in alarmed if y[i] == 1)
        n_fp = len(alarmed) - n_tp
        assert metrics[f"net_benefit[t={t:g}]"].value == pytest.approx(n_tp / len(p) - n_fp / len(p) * t / (1 - t))
        pi = y.mean()
        assert metrics[f"net_benefit_treat_all[t={t:g}]"].value == pytest.approx(pi - (1 - pi) * t / (1 - t))
    for r in (0.05, 0.2):
        tau = alarm_threshold(p, r)
        alarm = p >= tau
        assert alarm.mean() >= r and (p > tau).mean() < r  # the smallest alarm set holding a fraction r
        tn, fp, fn, tp = confusion_matrix(y, alarm.astype(int)).ravel()
        assert metrics[f"sensitivity[alarm={r:g}]"].value == pytest.approx(tp / (tp + fn))
        assert metrics[f"ppv[alarm={r:g}]"].value == pytest.approx(tp / (tp + fp))


def test_every_metric_has_an_interval_around_it() -> None:
    _, _, metrics, rep = report()
    for m in metrics.values():
        assert m.ci_low <= m.value <= m.ci_high, m
        assert m.ci_low < m.ci_high, m
    curve = rep.calibration_curve
    assert len(curve["predicted"]) == 10 and sum(curve["n"]) == 1500
    assert rep.decision_curve["thresholds"][0] == 0.01 and len(rep.decision_curve["model"]) == 60
