"""AUROC/AUPRC against scikit-learn, and the cluster bootstrap against a plain resampling loop."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

from medbench.stats.auroc import (
    auprc,
    auroc,
    cluster_bootstrap,
    cluster_pair_counts,
    replicate_auprcs,
    resample_cluster_counts,
    resample_cluster_draws,
    roc_points,
)


def data(n: int, n_clusters: int, prevalence: float, decimals: int | None, seed: int = 0):
    rng = np.random.default_rng(seed)
    clusters = rng.integers(0, n_clusters, n) * 7 + 1000  # ids need not be 0..C-1
    labels = (rng.random(n) < prevalence).astype(np.int8)
    scores = rng.normal(labels * 0.8 + (clusters % 3) * 0.2, 1.0)
    if decimals is not None:
        scores = np.round(scores, decimals)  # ties, within and across clusters
    return scores, labels, clusters


CASES = [(0.1, None), (0.5, 1), (0.9, 0), (0.03, 2)]


@pytest.mark.parametrize("prevalence,decimals", CASES)
def test_point_estimates_equal_sklearn(prevalence, decimals):
    s, y, _ = data(4000, 40, prevalence, decimals)
    assert auroc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert auprc(s, y) == pytest.approx(average_precision_score(y, s), abs=1e-12)
    w = np.random.default_rng(1).integers(0, 4, len(s))
    assert auprc(s, y, w) == pytest.approx(average_precision_score(y, s, sample_weight=w), abs=1e-12)


def test_single_class_has_no_auroc():
    assert np.isnan(auroc([0.1, 0.2], [1, 1])) and np.isnan(auprc([0.1, 0.2], [0, 0]))


def _reference_replicates(s, y, clusters, replicates, seed):
    ids = np.unique(clusters)
    members = [np.flatnonzero(clusters == i) for i in ids]
    draws = resample_cluster_draws(len(ids), replicates, seed)
    auc, ap = np.full(replicates, np.nan), np.full(replicates, np.nan)
    for r, drawn in enumerate(draws):
        idx = np.concatenate([members[k] for k in drawn])
        if len(np.unique(y[idx])) == 2:
            auc[r] = roc_auc_score(y[idx], s[idx])
            ap[r] = average_precision_score(y[idx], s[idx])
    return auc, ap


@pytest.mark.parametrize("prevalence,decimals", CASES)
def test_bootstrap_equals_a_roc_auc_score_loop(prevalence, decimals):
    s, y, clusters = data(3000, 30, prevalence, decimals, seed=3)
    result = cluster_bootstrap(s, y, clusters, 150, seed=11)
    auc, ap = _reference_replicates(s, y, clusters, 150, 11)
    np.testing.assert_array_equal(np.isnan(result.replicate_values), np.isnan(auc))
    assert np.nanmax(np.abs(result.replicate_values - auc)) <= 1e-9
    counts = resample_cluster_counts(30, 150, 11)
    assert np.nanmax(np.abs(replicate_auprcs(s, y, clusters, counts) - ap)) <= 1e-9
    kept = auc[np.isfinite(auc)]
    assert result.ci_low == pytest.approx(np.percentile(kept, 2.5), abs=1e-12)
    assert result.ci_high == pytest.approx(np.percentile(kept, 97.5), abs=1e-12)
    kept_ap = ap[np.isfinite(ap)]
    assert result.auprc_ci_low == pytest.approx(np.percentile(kept_ap, 2.5), abs=1e-9)
    assert result.auroc == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert result.ci_low <= result.auroc <= result.ci_high


def test_pair_counts_are_the_pairwise_wins():
    s, y, clusters = data(300, 5, 0.3, 1, seed=5)
    pairs = cluster_pair_counts(s, y, clusters)
    ids = list(pairs.ids)
    expected = np.zeros((5, 5))
    for p in np.flatnonzero(y == 1):
        for q in np.flatnonzero(y == 0):
            expected[ids.index(clusters[p]), ids.index(clusters[q])] += (
                1.0 if s[p] > s[q] else 0.5 if s[p] == s[q] else 0.0
            )
    np.testing.assert_array_equal(pairs.wins, expected)
    assert pairs.positives.sum() == y.sum() and pairs.negatives.sum() == (1 - y).sum()


def test_one_class_replicates_are_dropped_and_counted():
    # all positives sit in one of three clusters: any replicate that misses it has one class only
    s = np.array([0.9, 0.8, 0.7, 0.1, 0.2, 0.3, 0.4, 0.05, 0.5, 0.6])
    y = np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 0])
    clusters = np.array([1, 1, 1, 2, 2, 2, 3, 3, 3, 3])
    result = cluster_bootstrap(s, y, clusters, 400, seed=2)
    draws = resample_cluster_draws(3, 400, 2)
    expected = int((~(draws == 0).any(axis=1)).sum())
    assert expected > 0
    assert result.n_dropped == expected
    assert int(np.isnan(result.replicate_values).sum()) == expected
    assert np.isfinite(result.ci_low) and np.isfinite(result.auprc_ci_high) and np.isfinite(result.prevalence_ci_low)


def test_bootstrap_is_reproducible_from_its_seed():
    s, y, clusters = data(2000, 25, 0.2, None, seed=9)
    a = cluster_bootstrap(s, y, clusters, 200, seed=5)
    b = cluster_bootstrap(s, y, clusters, 200, seed=5)
    c = cluster_bootstrap(s, y, clusters, 200, seed=6)
    np.testing.assert_array_equal(a.replicate_values, b.replicate_values)
    assert (a.ci_low, a.ci_high, a.auprc_ci_low) == (b.ci_low, b.ci_high, b.auprc_ci_low)
    assert not np.array_equal(a.replicate_values, c.replicate_values)
    assert [m["name"] for m in a.metrics()] == ["auroc", "auprc", "prevalence"]


def test_resample_counts_follow_the_documented_draw():
    counts = resample_cluster_counts(7, 50, 123)
    draws = np.random.default_rng(123).integers(0, 7, size=(50, 7))
    expected = np.stack([np.bincount(row, minlength=7) for row in draws])
    np.testing.assert_array_equal(counts, expected)
    assert (counts.sum(axis=1) == 7).all()


def test_roc_points_are_a_thinned_sklearn_curve():
    s, y, _ = data(5000, 10, 0.2, None, seed=4)
    full = roc_points(s, y, max_points=10**6)
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(full["fpr"], np.round(fpr, 6), atol=1e-6)
    np.testing.assert_allclose(full["tpr"], np.round(tpr, 6), atol=1e-6)
    thin = roc_points(s, y, max_points=200)
    assert len(thin["fpr"]) <= 200 and thin["fpr"][0] == 0 and thin["tpr"][-1] == 1.0
    assert all(a <= b for a, b in zip(thin["fpr"], thin["fpr"][1:], strict=False))
    assert all(a <= b for a, b in zip(thin["tpr"], thin["tpr"][1:], strict=False))
