"""Rank intervals and the group tied with the leader, from one joint paired bootstrap.

A leaderboard rank is a point estimate too: model 3 of 20 may well be model 1 on another sample of
items. Resampling every model's result separately would ignore that all results were computed on
the *same* items (or subjects), so every replicate here resamples the shared units once and
scores every model on that one resample (a joint paired bootstrap):

- Accuracy (``accuracy_rank_intervals``): units are items. Replicate r takes the items drawn by
  ``np.random.default_rng(seed).integers(0, n, size=n)`` in order r = 0, 1, ... (drawn in chunks
  of rows of one ``integers`` call, the same stream as ``medbench.stats.bootstrap``); the item
  multiplicities (bincount) times the correctness matrix give every model's number right in one
  matrix product.
- AUROC (``auroc_rank_intervals``): units are subjects, drawn as in ``medbench.stats.auroc``
  (``resample_cluster_counts``); each model's replicate AUROCs come from its per-cluster pair counts
  (``replicate_aurocs``), the very numbers ``/v1/compare`` differences. A replicate whose windows
  hold one class only has no AUROC for any model: it is left out and counted (``n_dropped``).

Two rank statements come from the same replicates:

- The marginal interval (``marginal_rank_low``/``marginal_rank_high``): in each replicate a model's
  rank is 1 + the number of models strictly better in that replicate (ties share the better rank);
  the interval is [2.5th percentile (``method="lower"``), 97.5th percentile (``method="higher"``)]
  of a model's replicate ranks, widened if needed to contain the model's point rank (the
  leaderboard order given by the caller: value descending, then eval date, then run id). It is
  inconsistent at ties (Hall & Miller 2009), so it is kept for reference only.
- The simultaneous 95% rank set (``set_low``/``set_high``, ``medbench.stats.rank_sets``, Mogstad
  et al. 2024, step-down): all models' sets cover their true ranks jointly, ties included.

``rank_low``/``rank_high`` are the hull of the two, so they are never narrower than either.
``tied_with_leader``: the model's simultaneous set contains rank 1 (the leader's always does).
``diff_low``/``diff_high`` stay the paired 95% interval of (model - leader) a pair comparison gives:
for accuracy the exact conditional interval dual to the exact McNemar test
(``medbench.stats.paired.paired_accuracy``), for AUROC the percentile interval (linear) of the
kept replicate differences of the paired cluster bootstrap, with the task's own seed and replicates.

Its file name is shared on purpose: the statistics are computed here; the module of the same name
elsewhere serves or measures them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from medbench.stats.auroc import (
    auroc,
    cluster_pair_counts,
    replicate_aurocs,
    resample_cluster_counts,
)
from medbench.stats.bootstrap import DEFAULT_MAX_CHUNK_VALUES
from medbench.stats.paired import paired_accuracy_many
from medbench.stats.rank_sets import simultaneous_rank_sets

_COMPARE_ELEMENTS = 8_000_000  # replicates x models x models per block of the rank comparison


@dataclass(frozen=True)
class RankIntervals:
    rank_low: np.ndarray  # int64 [M]: hull of the simultaneous set and the marginal interval
    rank_high: np.ndarray  # int64 [M]
    tied_with_leader: np.ndarray  # bool [M]: the simultaneous set contains 1
    leader: int  # index of the model with point rank 1
    diff_low: np.ndarray  # float64 [M]: paired 95% interval of (model - leader)
    diff_high: np.ndarray
    n_replicates: int
    n_dropped: int  # replicates left out (one class only; always 0 for accuracy)
    marginal_rank_low: np.ndarray  # int64 [M]: percentile interval of the replicate ranks
    marginal_rank_high: np.ndarray
    set_low: np.ndarray  # int64 [M]: simultaneous 95% rank set
    set_high: np.ndarray


def _combine(estimates: np.ndarray, values: np.ndarray, point: np.ndarray, leader: int, diff_low, diff_high,
             replicates: int, dropped: int) -> RankIntervals:
    """Marginal intervals and simultaneous sets from the same (kept) replicates ``values`` [R, M]."""
    low, high = rank_bounds(replicate_ranks(values), point)
    sets = simultaneous_rank_sets(estimates, values)
    tied = sets.low == 1
    tied[leader] = True
    return RankIntervals(np.minimum(low, sets.low), np.maximum(high, sets.high), tied, leader,
                         np.asarray(diff_low, np.float64), np.asarray(diff_high, np.float64), int(replicates),
                         int(dropped), low, high, sets.low, sets.high)


def replicate_ranks(values: np.ndarray) -> np.ndarray:
    """1 + #{models strictly better} in each row of ``values`` [R, M] (int64 [R, M])."""
    v = np.asarray(values)
    r, m = v.shape
    out = np.empty((r, m), dtype=np.int64)
    block = max(1, _COMPARE_ELEMENTS // max(m * m, 1))
    for r0 in range(0, r, block):
        chunk = v[r0 : r0 + block]
        out[r0 : r0 + len(chunk)] = 1 + (chunk[:, None, :] > chunk[:, :, None]).sum(axis=2)
    return out


def _check_point_ranks(point_ranks, m: int) -> np.ndarray:
    p = np.asarray(point_ranks, dtype=np.int64).reshape(-1)
    if len(p) != m or sorted(p.tolist()) != list(range(1, m + 1)):
        raise ValueError(f"point_ranks must be a permutation of 1..{m}")
    return p


def rank_bounds(ranks: np.ndarray, point_ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bounds of replicate ranks [R, M], widened to contain the point ranks."""
    if len(ranks) == 0:
        return point_ranks.copy(), point_ranks.copy()
    low = np.percentile(ranks, 2.5, axis=0, method="lower").astype(np.int64)
    high = np.percentile(ranks, 97.5, axis=0, method="higher").astype(np.int64)
    return np.minimum(low, point_ranks), np.maximum(high, point_ranks)


def accuracy_replicate_sums(correct: np.ndarray, replicates: int, seed: int,
                            max_chunk_values: int = DEFAULT_MAX_CHUNK_VALUES) -> np.ndarray:
    """Number right of every model in every replicate, float64 [R, M] (exact integers)."""
    c = np.asarray(correct, dtype=bool)
    m, n = c.shape
    rng = np.random.default_rng(seed)
    weights = c.T.astype(np.float64)  # [N, M]
    out = np.empty((replicates, m), dtype=np.float64)
    rows_per_chunk = max(1, max_chunk_values // n)
    for start in range(0, replicates, rows_per_chunk):
        rows = min(rows_per_chunk, replicates - start)
        idx = rng.integers(0, n, size=(rows, n))
        flat = idx + (np.arange(rows, dtype=np.int64) * n)[:, None]
        counts = np.bincount(flat.reshape(-1), minlength=rows * n).reshape(rows, n)
        out[start : start + rows] = counts.astype(np.float64) @ weights
    return out


def accuracy_rank_intervals(correct, replicates: int, seed: int, point_ranks) -> RankIntervals:
    """Rank intervals over items for models' per-item correctness ``correct`` (bool [M, N])."""
    c = np.asarray(correct, dtype=bool)
    if c.ndim != 2 or c.shape[0] == 0 or c.shape[1] == 0:
        raise ValueError(f"correct must be a non-empty [models, items] array, got shape {c.shape}")
    m, n = c.shape
    p = _check_point_ranks(point_ranks, m)
    sums = accuracy_replicate_sums(c, replicates, seed)
    leader = int(np.flatnonzero(p == 1)[0])
    b = (c & ~c[leader]).sum(axis=1)  # items only the model got right
    d = (~c & c[leader]).sum(axis=1)  # items only the leader got right
    diff_low, diff_high, _ = paired_accuracy_many(b, d, n)
    return _combine(c.sum(axis=1).astype(np.float64), sums, p, leader, diff_low, diff_high, replicates, 0)


def auroc_replicate_values(scores, labels, subjects, replicates: int, seed: int) -> np.ndarray:
    """AUROC of every model in every replicate, float64 [R, M]; NaN rows where one class is absent."""
    s = np.asarray(scores, dtype=np.float64)
    counts = None
    out = np.empty((replicates, s.shape[0]), dtype=np.float64)
    for k in range(s.shape[0]):
        pairs = cluster_pair_counts(s[k], labels, subjects)
        if counts is None:
            counts = resample_cluster_counts(len(pairs.ids), replicates, seed)
        out[:, k] = replicate_aurocs(pairs, counts)
    return out


def auroc_rank_intervals(scores, labels, subjects, replicates: int, seed: int, point_ranks) -> RankIntervals:
    """Rank intervals over subjects for models' window scores ``scores`` (float [M, W])."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).reshape(-1).astype(bool)
    if s.ndim != 2 or s.shape[0] == 0 or s.shape[1] != len(y) or len(y) == 0:
        raise ValueError(f"scores must be [models, windows] matching {len(y)} labels, got shape {s.shape}")
    if y.all() or not y.any():
        raise ValueError("the shared windows hold one class only: AUROC is undefined")
    m = s.shape[0]
    p = _check_point_ranks(point_ranks, m)
    values = auroc_replicate_values(s, y, subjects, replicates, seed)
    kept = np.isfinite(values).all(axis=1)
    leader = int(np.flatnonzero(p == 1)[0])
    diffs = values[kept] - values[kept][:, [leader]]
    if len(diffs):
        diff_low, diff_high = np.percentile(diffs, [2.5, 97.5], axis=0)
    else:
        diff_low = diff_high = np.full(m, np.nan)
    estimates = np.array([auroc(s[k], y) for k in range(m)])
    return _combine(estimates, values[kept], p, leader, diff_low, diff_high, replicates, int((~kept).sum()))


def replicate_rank_intervals(estimates, replicate_values, point_ranks, direction: str = "higher",
                             dropped: int = 0) -> RankIntervals:
    """Rank intervals from any metric's joint replicates: ``estimates`` [M] on the full data and
    ``replicate_values`` [R, M] from one joint (paired, clustered) bootstrap of all M results, for a
    kind that computes its own metric (a plug-in's MAE). ``direction`` is the metric's: "lower" is
    ranked by -value, so rank 1 is the smallest error. The difference to the leader (``diff_low``,
    ``diff_high``) stays in the metric's own units (model - leader), a percentile interval."""
    values = np.asarray(replicate_values, dtype=np.float64)
    est = np.asarray(estimates, dtype=np.float64).reshape(-1)
    if values.ndim != 2 or values.shape[1] != len(est) or len(est) == 0:
        raise ValueError(f"replicate_values must be [replicates, {len(est)}], got shape {values.shape}")
    p = _check_point_ranks(point_ranks, len(est))
    leader = int(np.flatnonzero(p == 1)[0])
    kept = values[np.isfinite(values).all(axis=1)]
    if len(kept):
        diff_low, diff_high = np.percentile(kept - kept[:, [leader]], [2.5, 97.5], axis=0)
    else:
        diff_low = diff_high = np.full(len(est), np.nan)
    sign = -1.0 if direction == "lower" else 1.0
    return _combine(sign * est, sign * kept, p, leader, diff_low, diff_high, len(values),
                    int(dropped) + len(values) - len(kept))
