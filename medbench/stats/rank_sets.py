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
- The statistic follows the R package csranks (``csdiffmeans`` with ``stepdown=TRUE``, by the
  method's authors): the hypotheses are the *ordered* pairs (j, k), j != k, "theta_j <= theta_k".
  The critical value c is the (1 - alpha) quantile (linear interpolation, R's default type 7) over
  replicates of max over the ordered pairs still in play of ((theta*_j - theta*_k) -
  (theta_hat_j - theta_hat_k)) / se_jk; while both directions of a pair are in play that is
  |...| / se_jk.
- (j, k) is rejected, j confidently better than k, when (theta_hat_j - theta_hat_k) - c * se_jk > 0.
- Step-down: a rejected (j, k) leaves the family, but its reverse (k, j) stays in the maximum of
  every later step (it can never be rejected itself), so each step's c is no larger than the last
  and no smaller than a family without those directions; steps stop when nothing new is rejected.
  Dropping both directions (this module before the csranks port) gave smaller c and sets more
  liberal than the method cited. ``tests/support/csranks_port.py`` transcribes csranks'
  matrices and loop, and ``tests/unit/pipelines/test_csranks_port.py`` checks the sets agree.
- A pair with se_jk = 0 (the same difference in every replicate) adds nothing to the maximum (0/0)
  and is decided by its estimate alone, as csranks' bound theta_hat_j - theta_hat_k - c * 0 gives:
  different when the difference is not zero (a model parsing 100% of items in every replicate is
  confidently above one parsing 0%), never when it is zero.
- The set of j is [1 + #{k confidently better than j}, M - #{k confidently worse than j}]; it
  always holds j's point rank (a model is never confidently better than one with an equal or higher
  estimate).

The true rank of model j is 1 + #{k : theta_k > theta_j} (ties share the better rank).

Its file name is shared on purpose: the statistics are computed here; the module of the same name
elsewhere serves or measures them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
_PAIR_ELEMENTS = 4_000_000  # replicates x pairs per block of the max statistic


@dataclass(frozen=True)
class RankSets:
    low: np.ndarray  # int64 [M]
    high: np.ndarray  # int64 [M]
    better: np.ndarray  # bool [M, M]: better[j, k] = j confidently better than k
    critical_value: float  # c of the last step
    steps: int


def _max_statistic(errors: np.ndarray, jj: np.ndarray, kk: np.ndarray, scale: np.ndarray,
                   absolute: bool) -> np.ndarray:
    """max over the given pairs of (e_j - e_k) * scale_jk in every replicate (float64 [R]), of its
    absolute value when ``absolute``; -inf where there are no pairs.

    In float32: the statistic only sets a quantile, and half the memory traffic keeps the
    200-model bench (M^2 pairs x 2,000 replicates) well inside its budget."""
    r = errors.shape[0]
    out = np.full(r, -np.inf, dtype=np.float64)
    if len(jj) == 0:
        return out
    block = max(1, _PAIR_ELEMENTS // len(jj))
    for r0 in range(0, r, block):
        e = errors[r0 : r0 + block]
        x = (e[:, jj] - e[:, kk]) * scale
        out[r0 : r0 + len(e)] = (np.abs(x) if absolute else x).max(axis=1)
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
    d = theta[jj] - theta[kk]
    # a pair that never varies (the floor keeps float noise out) is decided by its estimate alone
    live = se > _zero_se(theta)
    decided = ~live & (d != 0)
    undecided = live.copy()  # both directions still in the family
    errors32 = errors.astype(np.float32)
    inv_se = np.zeros_like(se)
    inv_se[live] = 1.0 / se[live]
    # running max, per replicate, of the reverse directions of decided pairs: (loser - winner) / se
    reverse_max = np.full(len(reps), -np.inf)
    c, steps = 0.0, 0
    while undecided.any():  # each step decides a pair or stops
        steps += 1
        both = _max_statistic(errors32, jj[undecided], kk[undecided], inv_se[undecided].astype(np.float32), True)
        stat = np.maximum(both, reverse_max)
        c = float(np.quantile(stat, 1 - alpha))
        found = undecided & (np.abs(d) - c * se > 0)
        if not found.any():
            break
        decided |= found
        undecided &= ~found
        signed = (-np.sign(d[found]) * inv_se[found]).astype(np.float32)
        reverse_max = np.maximum(reverse_max, _max_statistic(errors32, jj[found], kk[found], signed, False))
        if not step_down:
            break
    pos = decided & (d > 0)
    neg = decided & (d < 0)
    better[jj[pos], kk[pos]] = True
    better[kk[neg], jj[neg]] = True
    low = 1 + better.sum(axis=0).astype(np.int64)  # models confidently better than j
    high = m - better.sum(axis=1).astype(np.int64)  # models j is confidently better than
    return RankSets(low, high, better, c, steps)


def _zero_se(theta: np.ndarray) -> float:
    """The SD below which a difference counts as constant (float noise of the covariance)."""
    return 1e-12 * max(1.0, float(np.abs(theta).max()))


def true_ranks(theta) -> np.ndarray:
    """1 + #{k : theta_k > theta_j} for every j (ties share the better rank)."""
    t = np.asarray(theta, dtype=np.float64).reshape(-1)
    return 1 + (t[None, :] > t[:, None]).sum(axis=1)
