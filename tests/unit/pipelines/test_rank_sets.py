"""Simultaneous rank sets (Mogstad et al. 2024): joint coverage at exact ties, where the marginal
percentile intervals fall short (Hall & Miller 2009), and the pieces checked against loops."""

from __future__ import annotations

import itertools
import math

import numpy as np

from medbench.stats.rank_sets import simultaneous_rank_sets, true_ranks
from medbench.stats.ranks import (
    accuracy_rank_intervals,
    accuracy_replicate_sums,
    auroc_rank_intervals,
    rank_bounds,
    replicate_ranks,
)

# five exactly tied models, one clearly better, two worse: true ranks 2,2,2,2,2,1,7,8
THETA = np.array([0.6] * 5 + [0.7, 0.5, 0.45])


def _point(values: np.ndarray) -> np.ndarray:
    order = np.lexsort((np.arange(len(values)), -values))
    p = np.empty(len(values), dtype=np.int64)
    p[order] = np.arange(1, len(values) + 1)
    return p


def _covers(low, high, truth) -> bool:
    return bool(np.all((low <= truth) & (truth <= high)))


def test_simultaneous_sets_cover_all_true_ranks_jointly_at_ties_and_marginal_intervals_do_not():
    truth = true_ranks(THETA)
    assert truth.tolist() == [2, 2, 2, 2, 2, 1, 7, 8]
    rng = np.random.default_rng(20240527)
    runs, items, replicates = 300, 300, 400
    joint_sets = joint_marginal = 0
    for _ in range(runs):
        correct = rng.random((len(THETA), items)) < THETA[:, None]
        sums = accuracy_replicate_sums(correct, replicates, int(rng.integers(2**31)))
        point = _point(correct.mean(axis=1))
        sets = simultaneous_rank_sets(correct.sum(axis=1).astype(np.float64), sums)
        low, high = rank_bounds(replicate_ranks(sums), point)
        joint_sets += _covers(sets.low, sets.high, truth)
        joint_marginal += _covers(low, high, truth)
    cov_sets, cov_marg = joint_sets / runs, joint_marginal / runs
    se_sets = math.sqrt(cov_sets * (1 - cov_sets) / runs)
    se_marg = math.sqrt(cov_marg * (1 - cov_marg) / runs)
    assert cov_sets >= 0.95 - 2 * se_sets, (cov_sets, cov_marg)
    assert cov_marg < 0.95 - 2 * se_marg, (cov_sets, cov_marg)  # the marginal intervals fall short


def _brute_force_sets(theta, reps, alpha=0.05):
    """Single-step sets by loops over pairs and replicates (the method as written)."""
    m = len(theta)
    se = {(j, k): np.std(reps[:, j] - reps[:, k], ddof=1) for j, k in itertools.permutations(range(m), 2)}
    stats = [max(abs((r[j] - r[k]) - (theta[j] - theta[k])) / se[j, k]
                 for j, k in itertools.permutations(range(m), 2) if se[j, k] > 0) for r in reps]
    c = float(np.quantile(stats, 1 - alpha))  # R type 7, as csranks
    better = lambda j, k: se[j, k] > 0 and (theta[j] - theta[k]) - c * se[j, k] > 0
    low = [1 + sum(better(k, j) for k in range(m) if k != j) for j in range(m)]
    high = [m - sum(better(j, k) for k in range(m) if k != j) for j in range(m)]
    return low, high, c


def test_single_step_matches_a_loop_and_step_down_is_never_wider():
    rng = np.random.default_rng(5)
    correct = rng.random((6, 200)) < np.array([0.3, 0.5, 0.5, 0.6, 0.8, 0.82])[:, None]
    sums = accuracy_replicate_sums(correct, 300, 11)
    theta = correct.sum(axis=1).astype(np.float64)
    one = simultaneous_rank_sets(theta, sums, step_down=False)
    low, high, c = _brute_force_sets(theta, sums)
    assert one.low.tolist() == low and one.high.tolist() == high
    assert math.isclose(one.critical_value, c, rel_tol=1e-5)
    down = simultaneous_rank_sets(theta, sums)
    assert np.all(down.low >= one.low) and np.all(down.high <= one.high)
    assert np.all(down.low <= _point(theta)) and np.all(_point(theta) <= down.high)


def test_rank_low_high_are_the_hull_and_tied_with_leader_is_the_set_containing_one():
    rng = np.random.default_rng(9)
    correct = rng.random((7, 250)) < np.array([0.55, 0.55, 0.55, 0.62, 0.4, 0.3, 0.7])[:, None]
    point = _point(correct.mean(axis=1))
    iv = accuracy_rank_intervals(correct, 500, 3, point)
    assert np.array_equal(iv.rank_low, np.minimum(iv.set_low, iv.marginal_rank_low))
    assert np.array_equal(iv.rank_high, np.maximum(iv.set_high, iv.marginal_rank_high))
    assert np.all(iv.rank_low <= iv.marginal_rank_low) and np.all(iv.rank_high >= iv.marginal_rank_high)
    assert np.array_equal(iv.tied_with_leader, iv.set_low == 1)
    assert iv.tied_with_leader[iv.leader]
    sets = simultaneous_rank_sets(correct.sum(axis=1).astype(np.float64), accuracy_replicate_sums(correct, 500, 3))
    assert np.array_equal(iv.set_low, sets.low) and np.array_equal(iv.set_high, sets.high)


def test_auroc_sets_use_the_kept_cluster_replicates():
    rng = np.random.default_rng(4)
    subjects = rng.integers(0, 60, size=600)
    labels = rng.random(600) < 0.3
    scores = np.stack([k * 0.4 * labels + rng.normal(0, 1, 600) for k in range(5)])
    iv = auroc_rank_intervals(scores, labels, subjects, 300, 8, np.array([5, 4, 3, 2, 1]))
    assert np.all(iv.rank_low <= iv.set_low) and np.all(iv.rank_high >= iv.set_high)
    assert np.all(iv.rank_low <= iv.marginal_rank_low) and np.all(iv.rank_high >= iv.marginal_rank_high)
    assert np.array_equal(iv.tied_with_leader, iv.set_low == 1)
    assert iv.set_low[4] == 1 and iv.set_high[0] == 5 and iv.set_low[0] > 1  # clear best and worst found


def test_identical_models_are_never_told_apart():
    correct = np.tile(np.random.default_rng(1).random(100) < 0.5, (3, 1))
    sets = simultaneous_rank_sets(correct.sum(axis=1).astype(np.float64), accuracy_replicate_sums(correct, 200, 2))
    assert sets.low.tolist() == [1, 1, 1] and sets.high.tolist() == [3, 3, 3]
