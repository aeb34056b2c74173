"""``api.compare`` and ``pipelines.stats`` compute the same resampling, each on its own side.

DESIGN's dependency rule keeps ``api`` from importing ``pipelines``, so the paired comparison has
its own numpy copy of the bootstrap draws, the cluster multiplicities and the pair-win counts that
the published intervals are computed with. Its docstring promises "the same draw as the published
intervals": this test holds the two copies to it, on inputs with ties, uneven clusters and either
class in the majority, so that a change to one side without the other fails here.
"""

from __future__ import annotations

import numpy as np
import pytest

from api import compare
from pipelines.stats import auroc as published_auroc
from pipelines.stats.bootstrap import bootstrap_replicate_means


@pytest.mark.parametrize("seed", [0, 7, 2026])
def test_bootstrap_replicate_means_are_the_same_draws(seed: int) -> None:
    values = np.random.default_rng(seed).integers(-1, 2, size=313).astype(np.float64)
    for replicates in (1, 250, 2000):
        mine = compare.bootstrap_mean_replicates(values, replicates, seed)
        theirs = bootstrap_replicate_means(values, replicates, seed)
        assert np.array_equal(mine, theirs)


@pytest.mark.parametrize("n_clusters, replicates, seed", [(1, 5, 0), (17, 300, 3), (64, 1000, 11)])
def test_cluster_multiplicities_are_the_same(n_clusters: int, replicates: int, seed: int) -> None:
    mine = compare.cluster_counts(n_clusters, replicates, seed)
    theirs = published_auroc.resample_cluster_counts(n_clusters, replicates, seed)
    assert np.array_equal(mine, theirs)
    assert (mine.sum(axis=1) == n_clusters).all()


def windows(seed: int, positive_share: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 600
    clusters = rng.choice(np.arange(100, 140), size=n, p=np.linspace(1, 3, 40) / np.linspace(1, 3, 40).sum())
    labels = rng.random(n) < positive_share
    scores = np.round(rng.normal(labels * 0.8, 1.0), 1)  # rounded: many ties, within and across classes
    return scores, labels, clusters


@pytest.mark.parametrize("seed, positive_share", [(1, 0.2), (2, 0.5), (3, 0.85)])
def test_pair_wins_and_replicate_aurocs_are_the_same(seed: int, positive_share: float) -> None:
    scores, labels, clusters = windows(seed, positive_share)
    ids, index = np.unique(clusters, return_inverse=True)
    mine = compare.ClusterPairs.of(scores, labels, index, len(ids))
    theirs = published_auroc.cluster_pair_counts(scores, labels, clusters)
    assert np.array_equal(mine.wins, theirs.wins)
    assert np.array_equal(mine.positives, theirs.positives) and np.array_equal(mine.negatives, theirs.negatives)
    counts = published_auroc.resample_cluster_counts(len(ids), 500, seed)
    np.testing.assert_allclose(mine.aurocs(counts), published_auroc.replicate_aurocs(theirs, counts), rtol=0, atol=1e-12)
    assert compare.auroc(scores, labels) == pytest.approx(published_auroc.auroc(scores, labels), abs=1e-12)
