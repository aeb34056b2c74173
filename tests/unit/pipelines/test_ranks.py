"""Rank intervals reproduced by brute force: an explicit loop over the same draws, ranks counted naively.

The loops reproduce the marginal interval (``marginal_rank_*``) and the paired interval to the leader
(``diff_*``); ``rank_low``/``rank_high`` are its hull with the simultaneous set, and
``tied_with_leader`` is that set containing 1 (``test_rank_sets``)."""

from __future__ import annotations

import numpy as np
import pytest

from medbench.stats.auroc import auroc, resample_cluster_draws
from medbench.stats.paired import paired_accuracy
from medbench.stats.ranks import accuracy_rank_intervals, auroc_rank_intervals


def _point_ranks(values):
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))
    out = [0] * len(values)
    for pos, i in enumerate(order):
        out[i] = pos + 1
    return out


def _naive_bounds(rank_rows, point):
    m = len(point)
    low, high = [], []
    for i in range(m):
        col = sorted(row[i] for row in rank_rows)
        k = len(col)
        lo = col[int(np.floor(0.025 * (k - 1)))]
        hi = col[int(np.ceil(0.975 * (k - 1)))]
        low.append(min(lo, point[i]))
        high.append(max(hi, point[i]))
    return low, high


def _naive_ranks(vals):
    return [1 + sum(1 for w in vals if w > v) for v in vals]


def brute_accuracy(correct, replicates, seed, point):
    m, n = correct.shape
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(replicates):
        idx = rng.integers(0, n, size=n)
        rows.append(_naive_ranks([int(correct[k, idx].sum()) for k in range(m)]))
    low, high = _naive_bounds(rows, point)
    leader = point.index(1)
    tied = []
    for k in range(m):
        b = int((correct[k] & ~correct[leader]).sum())
        c = int((~correct[k] & correct[leader]).sum())
        r = paired_accuracy(b, c, n)
        tied.append(k == leader or r.ci_low <= 0 <= r.ci_high)
    return low, high, tied


def brute_auroc(scores, labels, subjects, replicates, seed, point):
    ids = np.unique(subjects)
    draws = resample_cluster_draws(len(ids), replicates, seed)
    rows, diffs = [], []
    leader = point.index(1)
    for r in range(replicates):
        take = np.concatenate([np.flatnonzero(subjects == ids[j]) for j in draws[r]])
        y = labels[take]
        if y.all() or not y.any():
            continue
        vals = [auroc(scores[k, take], y) for k in range(len(scores))]
        rows.append(_naive_ranks(vals))
        diffs.append([v - vals[leader] for v in vals])
    low, high = _naive_bounds(rows, point)
    d = np.array(diffs)
    lo, hi = np.percentile(d, [2.5, 97.5], axis=0)
    tied = [k == leader or lo[k] <= 0 <= hi[k] for k in range(len(scores))]
    return low, high, tied, replicates - len(rows)


def _accuracy_case(seed=0, m=6, n=60):
    rng = np.random.default_rng(seed)
    skill = np.linspace(0.45, 0.75, m)
    return rng.random((m, n)) < skill[:, None]


@pytest.mark.parametrize("case_seed", [0, 1, 2])
def test_accuracy_matches_brute_force(case_seed):
    correct = _accuracy_case(case_seed)
    point = _point_ranks(correct.mean(axis=1).tolist())
    got = accuracy_rank_intervals(correct, 300, 7, point)
    low, high, tied = brute_accuracy(correct, 300, 7, point)
    assert got.marginal_rank_low.tolist() == low and got.marginal_rank_high.tolist() == high
    assert np.all(got.rank_low <= got.marginal_rank_low) and np.all(got.rank_high >= got.marginal_rank_high)
    paired_tie = (got.diff_low <= 0) & (got.diff_high >= 0)
    paired_tie[got.leader] = True
    assert paired_tie.tolist() == tied
    assert all(lo <= p <= hi for lo, p, hi in zip(low, point, high))


def _auroc_case(seed=0, m=4, subjects=15):
    rng = np.random.default_rng(seed)
    subj = rng.integers(0, subjects, size=120) + 100
    labels = rng.random(120) < 0.3
    scores = np.stack([labels * (0.3 + 0.4 * k) + rng.normal(0, 1, 120) for k in range(m)])
    scores[0] = np.round(scores[0], 1)  # ties within a model
    return scores, labels, subj


@pytest.mark.parametrize("case_seed", [0, 1])
def test_auroc_matches_brute_force(case_seed):
    scores, labels, subj = _auroc_case(case_seed)
    point = _point_ranks([auroc(s, labels) for s in scores])
    got = auroc_rank_intervals(scores, labels, subj, 200, 5, point)
    low, high, tied, dropped = brute_auroc(scores, labels, subj, 200, 5, point)
    assert got.marginal_rank_low.tolist() == low and got.marginal_rank_high.tolist() == high
    paired_tie = (got.diff_low <= 0) & (got.diff_high >= 0)
    paired_tie[got.leader] = True
    assert paired_tie.tolist() == tied
    assert got.n_dropped == dropped


def test_auroc_tie_agrees_with_compare():
    from api.compare import paired_auroc

    scores, labels, subj = _auroc_case(3)
    point = _point_ranks([auroc(s, labels) for s in scores])
    got = auroc_rank_intervals(scores, labels, subj, 200, 5, point)
    for k in range(len(scores)):
        cmp = paired_auroc(scores[k], scores[got.leader], labels, subj, 200, 5)
        assert (got.diff_low[k], got.diff_high[k]) == pytest.approx((cmp.ci_low, cmp.ci_high), abs=1e-12)
    assert got.tied_with_leader.tolist() == (got.set_low == 1).tolist()


def test_one_model():
    got = accuracy_rank_intervals(np.array([[True, False, True]]), 50, 1, [1])
    assert got.rank_low.tolist() == [1] and got.rank_high.tolist() == [1] and got.tied_with_leader.tolist() == [True]


def test_identical_models_are_tied():
    row = _accuracy_case(4, m=1, n=80)[0]
    got = accuracy_rank_intervals(np.stack([row, row]), 100, 1, [1, 2])
    assert got.tied_with_leader.tolist() == [True, True]
    assert got.marginal_rank_low.tolist() == [1, 1] and got.marginal_rank_high.tolist() == [1, 2]  # point rank 2 widens
    assert got.rank_low.tolist() == [1, 1] and got.rank_high.tolist() == [2, 2]  # the set: [1, 2] for both


def test_dominant_model_ranks_first():
    rng = np.random.default_rng(0)
    weak = rng.random((3, 200)) < 0.3
    correct = np.vstack([np.ones((1, 200), bool), weak])
    point = _point_ranks(correct.mean(axis=1).tolist())
    got = accuracy_rank_intervals(correct, 200, 2, point)
    assert (got.rank_low[0], got.rank_high[0]) == (1, 1)
    assert got.tied_with_leader.tolist() == [True, False, False, False]
