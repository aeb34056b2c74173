"""Benchmark: joint paired bootstrap rank intervals vs a straightforward per-replicate loop.

Accuracy: 200 models x 1,045 items x 2,000 replicates (target < 10 s). Ours
(``medbench.stats.ranks.accuracy_rank_intervals``) counts each replicate's items once (bincount)
and scores every model with one matrix product. The loop draws the same items replicate by
replicate (``rng.integers(0, n, size=n)``), indexes every model's correctness and ranks the models
with a Python loop over the models.

AUROC: 50 models x 1,200 subjects (60,000 windows) x 1,000 replicates (target < 60 s). Ours uses
per-model cluster pair counts (``replicate_aurocs``); the loop builds each replicate's windows
from the drawn subjects and computes every model's AUROC on them (``medbench.stats.auroc.auroc``).
The loop is timed on a stated number of replicates and scaled to all of them (printed as such);
its ranks on those replicates must equal ours, and at ``--tiny`` both intervals are compared whole.

Joint coverage at ties: five exactly tied models, one better, two worse (true ranks 2,2,2,2,2,1,7,8),
300 items, 400 replicates per simulated board; the share of boards whose simultaneous sets
(``medbench.stats.rank_sets``) cover every true rank at once, with its Monte Carlo SE, beside the
marginal percentile intervals' share (target: the sets' share >= 95% - 2 SE).

    python -m bench.ranks [--tiny]

Its file name is shared on purpose: each benchmark is named after what it measures.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from medbench.stats.auroc import auroc, resample_cluster_draws
from medbench.stats.ranks import (
    accuracy_rank_intervals,
    accuracy_replicate_sums,
    auroc_rank_intervals,
    auroc_replicate_values,
    rank_bounds,
    replicate_ranks,
)
from medbench.stats.rank_sets import simultaneous_rank_sets, true_ranks

SCALES = {
    "tiny": {"acc": (20, 200, 200, 200), "auroc": (5, 40, 2_000, 100, 100), "ties": 100},
    "full": {"acc": (200, 1_045, 2_000, 2_000), "auroc": (50, 1_200, 60_000, 1_000, 4), "ties": 1_000},
}  # acc: models, items, replicates, loop replicates; auroc: models, subjects, windows, replicates, loop replicates
SEED = 20261202
TARGET_ACC_S, TARGET_AUROC_S = 10.0, 60.0


def _point(values: np.ndarray) -> np.ndarray:
    order = np.lexsort((np.arange(len(values)), -values))
    p = np.empty(len(values), dtype=np.int64)
    p[order] = np.arange(1, len(values) + 1)
    return p


def _naive_rank_rows(vals: list[float]) -> list[int]:
    return [1 + sum(1 for w in vals if w > v) for v in vals]


def bench_accuracy(models: int, items: int, replicates: int, loop_replicates: int) -> bool:
    rng = np.random.default_rng(1)
    correct = rng.random((models, items)) < np.linspace(0.3, 0.8, models)[:, None]
    point = _point(correct.mean(axis=1))
    start = time.perf_counter()
    ours = accuracy_rank_intervals(correct, replicates, SEED, point)
    t_ours = time.perf_counter() - start

    start = time.perf_counter()
    draw = np.random.default_rng(SEED)
    rows = []
    for _ in range(loop_replicates):
        idx = draw.integers(0, items, size=items)
        rows.append(_naive_rank_rows([int(correct[k, idx].sum()) for k in range(models)]))
    t_loop = (time.perf_counter() - start) * replicates / loop_replicates
    if loop_replicates == replicates:
        low, high = rank_bounds(np.array(rows), point)
        same = np.array_equal(low, ours.marginal_rank_low) and np.array_equal(high, ours.marginal_rank_high)
    else:
        same = np.array_equal(np.array(rows), replicate_ranks(accuracy_replicate_sums(correct, loop_replicates, SEED)))
    scaled = "" if loop_replicates == replicates else f" (timed on {loop_replicates} replicates, scaled)"
    print(f"accuracy {models} models x {items} items x {replicates} replicates: ours {t_ours:.2f} s, "
          f"loop {t_loop:.2f} s{scaled}, ratio {t_loop / t_ours:.1f}x, same intervals: {same}, "
          f"target < {TARGET_ACC_S:.0f} s: {'met' if t_ours < TARGET_ACC_S else 'MISSED'}")
    return same


def bench_auroc(models: int, subjects: int, windows: int, replicates: int, loop_replicates: int) -> bool:
    rng = np.random.default_rng(2)
    subj = rng.integers(0, subjects, size=windows)
    risk = rng.beta(1.2, 12, subjects)[subj]
    labels = rng.random(windows) < risk
    effect = rng.normal(0, 0.5, subjects)[subj]
    scores = np.stack([(0.5 + 1.5 * k / models) * labels + effect + rng.normal(0, 1, windows) for k in range(models)])
    point = _point(np.array([auroc(s, labels) for s in scores]))
    start = time.perf_counter()
    ours = auroc_rank_intervals(scores, labels, subj, replicates, SEED, point)
    t_ours = time.perf_counter() - start

    ids = np.unique(subj)
    members = [np.flatnonzero(subj == i) for i in ids]
    draws = resample_cluster_draws(len(ids), replicates, SEED)
    start = time.perf_counter()
    rows, kept = [], []
    for r in range(loop_replicates):
        take = np.concatenate([members[j] for j in draws[r]])
        y = labels[take]
        if y.all() or not y.any():
            continue
        kept.append(r)
        rows.append(_naive_rank_rows([auroc(scores[k, take], y) for k in range(models)]))
    t_loop = (time.perf_counter() - start) * replicates / loop_replicates
    if loop_replicates == replicates:
        low, high = rank_bounds(np.array(rows), point)
        same = np.array_equal(low, ours.marginal_rank_low) and np.array_equal(high, ours.marginal_rank_high)
    else:
        values = auroc_replicate_values(scores[:, :], labels, subj, loop_replicates, SEED)[kept]
        same = np.array_equal(np.array(rows), replicate_ranks(values))
    scaled = "" if loop_replicates == replicates else f" (timed on {loop_replicates} replicates, scaled)"
    print(f"auroc {models} models x {subjects} subjects ({windows} windows) x {replicates} replicates: "
          f"ours {t_ours:.2f} s, loop {t_loop:.2f} s{scaled}, ratio {t_loop / t_ours:.1f}x, same: {same}, "
          f"dropped {ours.n_dropped}, target < {TARGET_AUROC_S:.0f} s: {'met' if t_ours < TARGET_AUROC_S else 'MISSED'}")
    return same


TIES_THETA = np.array([0.6] * 5 + [0.7, 0.5, 0.45])


def bench_coverage_at_ties(runs: int, items: int = 300, replicates: int = 400) -> bool:
    truth = true_ranks(TIES_THETA)
    rng = np.random.default_rng(20240527)
    sets_hit = marginal_hit = 0
    start = time.perf_counter()
    for _ in range(runs):
        correct = rng.random((len(TIES_THETA), items)) < TIES_THETA[:, None]
        sums = accuracy_replicate_sums(correct, replicates, int(rng.integers(2**31)))
        sets = simultaneous_rank_sets(correct.sum(axis=1).astype(np.float64), sums)
        low, high = rank_bounds(replicate_ranks(sums), _point(correct.mean(axis=1)))
        sets_hit += bool(np.all((sets.low <= truth) & (truth <= sets.high)))
        marginal_hit += bool(np.all((low <= truth) & (truth <= high)))
    cov, marg = sets_hit / runs, marginal_hit / runs
    se, se_m = (cov * (1 - cov) / runs) ** 0.5, (marg * (1 - marg) / runs) ** 0.5
    met = cov >= 0.95 - 2 * se
    print(f"joint coverage at ties ({runs} boards of 8 models, 5 tied, {items} items, {replicates} replicates): "
          f"simultaneous sets {cov:.3f} (MC SE {se:.3f}), marginal intervals {marg:.3f} (MC SE {se_m:.3f}); "
          f"target >= 0.95 within 2 SE: {'met' if met else 'MISSED'} ({time.perf_counter() - start:.1f} s)")
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small sizes, the whole loop (for CI)")
    args = parser.parse_args(argv)
    scale = SCALES["tiny" if args.tiny else "full"]
    ok = bench_accuracy(*scale["acc"])
    ok = bench_auroc(*scale["auroc"]) and ok
    ok = bench_coverage_at_ties(scale["ties"]) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
