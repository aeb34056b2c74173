"""Simultaneous rank confidence sets (Mogstad, Romano, Shaikh and Wilhelm, "Inference for ranks",
Rev. Econ. Stud. 2024), from the replicates of one joint paired bootstrap.

Why not the marginal percentile intervals alone: at exact ties the bootstrap distribution of a rank
is inconsistent (Hall & Miller, Ann. Statist. 2009); five tied models each cover their true rank
only ~80% of the time and all five at once far less. The sets here instead come from simultaneous
confidence intervals for every pairwise difference, so they cover *all* true ranks jointly with
probability >= 1 - alpha (asymptotically), ties included.

With estimates theta_hat [M] and replicates theta* [R, M]:

- se_jk: the bootstrap standard deviation of theta*_j - theta*_k, from the replicates' covariance
  (Var_j + Var_k - 2 Cov_jk), so no [R, M, M] array is ever formed for it.
- The critical value c: the (1 - alpha) quantile (``method="higher"``) over replicates of
  max over pairs j < k (se_jk > 0) of |(theta*_j - theta*_k) - (theta_hat_j - theta_hat_k)| / se_jk.
- j is confidently better than k when (theta_hat_j - theta_hat_k) - c * se_jk > 0.
- Step-down (Romano & Wolf): pairs found different are removed and c recomputed over the rest until
  nothing new is found; each step's c is no larger, and the procedure keeps the joint level.
- The set of j is [1 + #{k confidently better than j}, M - #{k confidently worse than j}]; it
  always holds j's point rank (a model is never confidently better than one with an equal or higher
  estimate). A pair with se_jk = 0 (identical in every replicate) is never declared different.

The true rank of model j is 1 + #{k : theta_k > theta_j} (ties share the better rank).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
_PAIR_ELEMENTS = 4_000_000  # replicates x pairs per block of the max statistic
_MAX_STEPS = 50


@dataclass(frozen=True)
class RankSets:
    low: np.ndarray  # int64 [M]
    high: np.ndarray  # int64 [M]
    better: np.ndarray  # bool [M, M]: better[j, k] = j confidently better than k
    critical_value: float  # c of the last step
    steps: int


def _max_statistic(errors: np.ndarray, jj: np.ndarray, kk: np.ndarray, inv_se: np.ndarray) -> np.ndarray:
    """max over the given pairs of |e_j - e_k| / se_jk in every replicate (float64 [R]).

    In float32: the statistic only sets a quantile, and half the memory traffic keeps the
    200-model bench (K^2 pairs x 2,000 replicates per step) well inside its budget."""
    r = errors.shape[0]
    out = np.zeros(r, dtype=np.float64)
    if len(jj) == 0:
        return out
    block = max(1, _PAIR_ELEMENTS // len(jj))
    for r0 in range(0, r, block):
        e = errors[r0 : r0 + block]
        out[r0 : r0 + len(e)] = np.abs((e[:, jj] - e[:, kk]) * inv_se).max(axis=1)
    return out


def simultaneous_rank_sets(estimates, replicates, alpha: float = ALPHA, step_down: bool = True) -> RankSets:
    """Rank sets of M models from their estimates [M] and joint bootstrap replicates [R, M].

    Higher is better. Replicates must be finite (drop the undefined ones first)."""
    theta = np.asarray(estimates, dtype=np.float64).reshape(-1)
    reps = np.asarray(replicates, dtype=np.float64)
    m = len(theta)
    if reps.ndim != 2 or reps.shape[1] != m:
        raise ValueError(f"replicates must be [R, {m}], got shape {reps.shape}")
    better = np.zeros((m, m), dtype=bool)
    if len(reps) == 0 or m < 2:
        low = 1 + np.zeros(m, dtype=np.int64)
        return RankSets(low, np.full(m, m, dtype=np.int64), better, float("inf"), 0)
    errors = reps - theta  # centred on the estimates, as the difference statistic asks
    cov = np.atleast_2d(np.cov(errors, rowvar=False, ddof=1)) if len(reps) > 1 else np.zeros((m, m))
    var = np.diag(cov)
    jj, kk = np.triu_indices(m, 1)
    se = np.sqrt(np.maximum(var[jj] + var[kk] - 2 * cov[jj, kk], 0.0))
    # a pair that never varies cannot be told apart (and the floor keeps float noise out)
    live = se > 1e-12 * max(1.0, float(np.abs(theta).max()))
    jj, kk, se = jj[live], kk[live], se[live]
    d = theta[jj] - theta[kk]
    open_ = np.ones(len(jj), dtype=bool)  # pairs not yet found different
    errors32 = errors.astype(np.float32)
    c, steps = float("inf"), 0
    while open_.any() and steps < _MAX_STEPS:
        steps += 1
        stat = _max_statistic(errors32, jj[open_], kk[open_], (1.0 / se[open_]).astype(np.float32))
        c = float(np.quantile(stat, 1 - alpha, method="higher"))
        found = open_ & (np.abs(d) - c * se > 0)
        if not found.any():
            break
        open_ &= ~found
        if not step_down:
            break
    decided = ~open_
    pos = decided & (d > 0)
    neg = decided & (d < 0)
    better[jj[pos], kk[pos]] = True
    better[kk[neg], jj[neg]] = True
    low = 1 + better.sum(axis=0).astype(np.int64)  # models confidently better than j
    high = m - better.sum(axis=1).astype(np.int64)  # models j is confidently better than
    return RankSets(low, high, better, c, steps)


def true_ranks(theta) -> np.ndarray:
    """1 + #{k : theta_k > theta_j} for every j (ties share the better rank)."""
    t = np.asarray(theta, dtype=np.float64).reshape(-1)
    return 1 + (t[None, :] > t[:, None]).sum(axis=1)
