"""A line-by-line port of csranks' simultaneous rank sets (R package csranks by the method's authors,
``R/diffmeans.R`` ``csdiffmeans`` and ``R/ranks.R`` ``csranks_simul``, two-sided, ``stepdown=TRUE``),
kept deliberately naive: p x p matrices, R's loop, no blocking or float32. It checks
``medbench.stats.rank_sets`` (docs/statistics.md, "Rank intervals").

Two substitutions, both stated in docs/statistics.md:

- csranks draws Z from N(0, Sigma) (a parametric bootstrap); medbench has the joint bootstrap's
  replicates, so Z here is the replicates minus the estimates, and Sigma their covariance.
- A difference with SD 0 gives 0/0 in csranks' scaled differences; it is left out of the maximum here
  (nanmax), and its bound theta_i - theta_j - z * 0 decides it as csranks' formula does.
"""

from __future__ import annotations

import numpy as np


def _quantile_type7(x: np.ndarray, prob: float) -> float:
    """R's ``quantile(x, probs)`` with its default type 7, written out."""
    xs = np.sort(np.asarray(x, dtype=np.float64))
    h = (len(xs) - 1) * prob
    lo = int(np.floor(h))
    hi = min(lo + 1, len(xs) - 1)
    return float(xs[lo] + (h - lo) * (xs[hi] - xs[lo]))


def csdiffmeans(x: np.ndarray, z: np.ndarray, coverage: float = 0.95, zero_sd: float = 1e-12):
    """Lower bounds ChatL [p, p] of the differences x_i - x_j (csranks' symmetric + stepdown case,
    which it turns into cstype "lower" over all ordered pairs)."""
    x = np.asarray(x, dtype=np.float64)
    p = len(x)
    cov_mat = np.cov(z, rowvar=False, ddof=1)
    thetadiff = x[:, None] - x[None, :]  # outer(x, x, "-")
    var = np.diag(cov_mat)
    sigmadiff = np.sqrt(np.maximum(var[:, None] + var[None, :] - 2 * cov_mat, 0.0))
    sigmadiff[sigmadiff <= zero_sd] = 0.0
    chat_l = np.zeros((p, p))
    i0 = np.ones((p, p), dtype=bool)  # initialize_I0: every ordered pair, no diagonal
    np.fill_diagonal(i0, False)
    i1 = i0.copy()
    istar = i0.copy()
    while True:
        # LLowerInv(I1, coverage): the quantile over draws of max over (i, j) in I1 of (Z_i - Z_j) / sigma_ij
        maxima = []
        for row in z:
            best = -np.inf
            for i in range(p):
                for j in range(p):
                    if i1[i, j] and sigmadiff[i, j] > 0:
                        best = max(best, (row[i] - row[j]) / sigmadiff[i, j])
            maxima.append(best if np.isfinite(best) else 0.0)
        zq = _quantile_type7(np.array(maxima), coverage)
        chat_l[i1] = thetadiff[i1] - sigmadiff[i1] * zq
        i1 = i1 & ~(chat_l > 0)  # I1[ChatU < 0 | ChatL > 0] <- FALSE (ChatU is Inf)
        if i1.sum() == i0.sum() or i1.sum() == 0:
            break
        i0 = i1.copy()
    chat_l[~istar] = np.nan
    return chat_l


def csranks_simul(x: np.ndarray, replicates: np.ndarray, coverage: float = 0.95, zero_sd: float = 1e-12):
    """(L, U): the simultaneous rank sets, 1 = best (higher x is better)."""
    x = np.asarray(x, dtype=np.float64)
    z = np.asarray(replicates, dtype=np.float64) - x
    chat_l = csdiffmeans(x, z, coverage, zero_sd)
    positive = np.nan_to_num(chat_l, nan=0.0) > 0
    n_plus = positive.sum(axis=1)  # rowSums(L > 0): populations i is confidently above
    n_minus = positive.sum(axis=0)  # colSums(L > 0): populations confidently above i
    return (n_minus + 1).astype(np.int64), (len(x) - n_plus).astype(np.int64)
