"""The smallest difference in a task's primary metric that a paired comparison at the task's n
detects with 80% power at two-sided alpha = 0.05 (docs/statistics.md, "Smallest detectable
difference").

- Accuracy (the exact McNemar test of ``/v1/compare``): with n items and a discordant-pair rate psi
  (the share of items on which two models disagree in correctness), the normal approximation to
  McNemar's test (Connor, Biometrics 1987) needs
  n = (z_{1-alpha/2} sqrt(psi) + z_{power} sqrt(psi - delta^2))^2 / delta^2 items to detect a
  difference delta; solved here for delta at the task's n. psi is the median over the pairs of the
  task's current results (a typical pair).
- Bootstrapped metrics (AUROC: the paired cluster bootstrap of ``/v1/compare``): the difference
  estimate is about normal with SD s, so delta = (z_{1-alpha/2} + z_{power}) s, with s the median
  over the pairs of current results of the bootstrap SD of their paired difference.

``tests/unit/pipelines/test_detectable.py`` checks both against simulated comparisons.

Its file name is shared on purpose: the statistics are computed here; the module of the same name
elsewhere serves or measures them.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

POWER = 0.8
ALPHA = 0.05
_N = NormalDist()


def _z() -> tuple[float, float]:
    return _N.inv_cdf(1 - ALPHA / 2), _N.inv_cdf(POWER)


def mcnemar_detectable(psi: float, n: int) -> float:
    """The delta solving n delta^2 = (z_a sqrt(psi) + z_b sqrt(psi - delta^2))^2 (0 < delta <= psi)."""
    if n <= 0 or not 0 < psi <= 1:
        return float("nan")
    za, zb = _z()

    def excess(d: float) -> float:  # decreasing in d: positive below the root
        return (za * math.sqrt(psi) + zb * math.sqrt(max(psi - d * d, 0.0))) / math.sqrt(n) - d

    low, high = 0.0, psi
    if excess(high) > 0:  # even a difference as large as psi is not detected at this n
        return float("nan")
    for _ in range(80):
        mid = (low + high) / 2
        low, high = (mid, high) if excess(mid) > 0 else (low, mid)
    return (low + high) / 2


def bootstrap_detectable(sd: float) -> float:
    """(z_{1-alpha/2} + z_{power}) * sd."""
    za, zb = _z()
    return (za + zb) * sd


def median_discordant_rate(correct: np.ndarray) -> float:
    """Median over pairs of models (rows of bool [M, N]) of the share of items they disagree on."""
    c = np.asarray(correct, dtype=bool)
    j, k = np.triu_indices(c.shape[0], 1)
    if not len(j):
        return float("nan")
    x = c.astype(np.float64)
    agree_right = x @ x.T
    right = x.sum(axis=1)
    discordant = right[:, None] + right[None, :] - 2 * agree_right  # b + c of every pair
    return float(np.median(discordant[j, k] / c.shape[1]))


def median_pair_sd(replicates: np.ndarray) -> float:
    """Median over pairs of columns of ``replicates`` [R, M] of the SD of their difference."""
    r = np.asarray(replicates, dtype=np.float64)
    if r.ndim != 2 or r.shape[1] < 2 or r.shape[0] < 2:
        return float("nan")
    cov = np.cov(r, rowvar=False, ddof=1)
    v = np.diag(cov)
    j, k = np.triu_indices(r.shape[1], 1)
    return float(np.median(np.sqrt(np.maximum(v[j] + v[k] - 2 * cov[j, k], 0.0))))
