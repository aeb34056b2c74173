"""Benchmark: coverage of cluster-bootstrap 95% intervals with few clusters (docs/statistics.md,
"Intervals with few subjects").

Simulated risk-score data with patients as clusters: C clusters of ``WINDOWS`` windows each; a
patient effect u ~ N(0, 1) and a window effect v ~ N(0, 1); label ~ Bernoulli(sigmoid(-2 + u + v))
(prevalence about 0.2); score = v + 0.5 u + N(0, 0.8^2). Metrics: AUROC, accuracy of
"score > 1" and sensitivity at "score > 0.5", their true values from 40,000 simulated patients.
Every simulation draws a fresh data set and ``REPLICATES`` cluster-bootstrap replicates (the
counts of ``medbench.stats.auroc.resample_cluster_counts``), then checks which intervals contain
the true value:

- ``percentile``: the plain percentile interval (medbench's method before);
- ``expanded``: the percentile interval at Hesterberg's expanded level (``medbench.stats.intervals``,
  the published one, marked "chosen");
- ``bca``: BCa (Efron 1987), acceleration from the leave-one-cluster-out jackknife;
- ``bca-expanded``: BCa at the expanded level.

Each cell prints the coverage and its Monte Carlo SE sqrt(p (1 - p) / sims). Target: coverage
>= 0.94 within 2 SE (coverage + 2 SE >= 0.94) at 15 clusters or more.

    python -m bench.coverage [--quick] [--sims N]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from medbench.stats.auroc import auroc, cluster_pair_counts, replicate_aurocs, resample_cluster_counts
from statistics import NormalDist

from medbench.stats.intervals import MIN_CLUSTERS, expanded_alpha, percentile_interval

WINDOWS = 20
REPLICATES = 1_000
SIZES = (15, 30, 60, 300)
METHODS = ("percentile", "expanded", "bca", "bca-expanded")
TARGET = 0.94
SEED = 20261207


_N = NormalDist()


def bca_interval(est: float, values: np.ndarray, jack: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """BCa interval of the finite replicate ``values`` with jackknife values ``jack``; NaN when undefined."""
    v, jk = values[np.isfinite(values)], jack[np.isfinite(jack)]
    if not len(v) or not math.isfinite(est) or len(jk) < 2:
        return float("nan"), float("nan")
    below = (np.count_nonzero(v < est) + 0.5 * np.count_nonzero(v == est)) / len(v)
    if not 0 < below < 1:
        return float("nan"), float("nan")
    z0 = _N.inv_cdf(below)
    d = jk.mean() - jk
    denom = 6.0 * float((d**2).sum()) ** 1.5
    acc = float((d**3).sum()) / denom if denom > 0 else 0.0
    levels = [_N.cdf(z0 + (z0 + z) / (1 - acc * (z0 + z))) for z in (_N.inv_cdf(alpha / 2), _N.inv_cdf(1 - alpha / 2))]
    low, high = np.percentile(v, [100 * levels[0], 100 * levels[1]])
    return float(low), float(high)


def _simulate(rng: np.random.Generator, n_clusters: int):
    u = np.repeat(rng.normal(0, 1, n_clusters), WINDOWS)
    v = rng.normal(0, 1, len(u))
    y = rng.random(len(u)) < 1 / (1 + np.exp(-(-2 + u + v)))
    score = v + 0.5 * u + rng.normal(0, 0.8, len(u))
    clusters = np.repeat(np.arange(n_clusters), WINDOWS)
    return score, y, clusters


def truth() -> dict[str, float]:
    score, y, _ = _simulate(np.random.default_rng(1), 40_000)
    return {"auroc": auroc(score, y), "accuracy": float(((score > 1) == y).mean()),
            "sensitivity": float((score[y] > 0.5).mean())}


def _ratio_values(num: np.ndarray, den: np.ndarray, counts: np.ndarray):
    """Point, replicate and jackknife values of sum(num) / sum(den) over clusters."""
    m = counts.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (m @ num) / (m @ den)
        jack = (num.sum() - num) / (den.sum() - den)
    return float(num.sum() / den.sum()) if den.sum() else float("nan"), reps, jack


def _auroc_values(score, y, clusters, counts):
    pairs = cluster_pair_counts(score, y, clusters)
    w, p, n = pairs.wins, pairs.positives, pairs.negatives
    with np.errstate(invalid="ignore", divide="ignore"):
        jack = (w.sum() - w.sum(axis=1) - w.sum(axis=0) + np.diag(w)) / ((p.sum() - p) * (n.sum() - n))
    return auroc(score, y), replicate_aurocs(pairs, counts), jack


def _intervals(est, reps, jack, n_clusters) -> dict[str, tuple[float, float]]:
    a = expanded_alpha(n_clusters)
    return {"percentile": percentile_interval(reps), "expanded": percentile_interval(reps, a),
            "bca": bca_interval(est, reps, jack), "bca-expanded": bca_interval(est, reps, jack, a)}


def run_cell(n_clusters: int, sims: int, replicates: int, true: dict[str, float], seed: int):
    rng = np.random.default_rng(seed)
    hits = {(metric, m): 0 for metric in true for m in METHODS}
    for s in range(sims):
        score, y, clusters = _simulate(rng, n_clusters)
        counts = resample_cluster_counts(n_clusters, replicates, seed + 7919 * s)
        sizes = np.bincount(clusters, minlength=n_clusters).astype(np.float64)
        right = np.bincount(clusters, weights=(score > 1) == y, minlength=n_clusters)
        pos = np.bincount(clusters, weights=y, minlength=n_clusters)
        tp = np.bincount(clusters, weights=y & (score > 0.5), minlength=n_clusters)
        values = {"auroc": _auroc_values(score, y, clusters, counts),
                  "accuracy": _ratio_values(right, sizes, counts),
                  "sensitivity": _ratio_values(tp, pos, counts)}
        for metric, (est, reps, jack) in values.items():
            for m, (low, high) in _intervals(est, reps, jack, n_clusters).items():
                hits[metric, m] += bool(low <= true[metric] <= high)  # NaN (undefined) never covers
    return {k: v / sims for k, v in hits.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="15 and 30 clusters, 100 simulations, 200 replicates")
    parser.add_argument("--sims", type=int, default=None, help="simulations per cell (default 1,000)")
    args = parser.parse_args(argv)
    sizes, sims, replicates = ((15, 30), 100, 200) if args.quick else (SIZES, 1_000, REPLICATES)
    sims = args.sims or sims
    true = truth()
    print(f"true values: " + ", ".join(f"{k} {v:.4f}" for k, v in true.items()))
    print(f"{sims} simulations per cell, {replicates} replicates, {WINDOWS} windows per cluster; "
          f"target coverage >= {TARGET} within 2 MC SE at >= {MIN_CLUSTERS} clusters")
    chosen_ok = True
    for n in sizes:
        start = time.perf_counter()
        cov = run_cell(n, sims, replicates, true, SEED + n)
        for metric in true:
            cells = []
            for m in METHODS:
                p = cov[metric, m]
                cells.append(f"{m} {p:.3f} ({math.sqrt(p * (1 - p) / sims):.3f})")
            p = cov[metric, "expanded"]
            ok = p + 2 * math.sqrt(p * (1 - p) / sims) >= TARGET
            chosen_ok = chosen_ok and (ok or n < MIN_CLUSTERS)
            print(f"C={n:<4d} {metric:<12s} " + "  ".join(cells) + f"  chosen: {'met' if ok else 'MISSED'}")
        print(f"C={n:<4d} ({time.perf_counter() - start:.1f} s)")
    return 0 if chosen_ok else 1


if __name__ == "__main__":
    sys.exit(main())
