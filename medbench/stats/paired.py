"""Paired comparison of two accuracies on the same items: exact McNemar test and its interval.

With b = items only A got right, c = items only B got right, n items, the difference in accuracy
is (b - c) / n. Conditional on m = b + c discordant items, b ~ Bin(m, theta) and
accuracy(A) - accuracy(B) = (2 theta - 1) m / n, so H0 "no difference" is theta = 1/2:

- p-value: the exact McNemar test, p = min(1, 2 min(P(X <= b), P(X >= b))), X ~ Bin(m, 1/2);
  p = 1 when m = 0. The tails are exact integers (sums of math.comb, cached per m) over 2^m.
- interval: the Clopper-Pearson (1934) interval [tL, tU] for theta, mapped to the difference:
  [(2 tL - 1) m / n, (2 tU - 1) m / n]. tL solves P(X >= b; tL) = alpha/2 (tL = 0 at b = 0); the
  upper bound follows by symmetry, tU(b, m) = 1 - tL(m - b, m). m = 0 gives [0, 0].

Why this pair agrees with itself (a percentile bootstrap interval next to an exact test does not:
the issue's b = 9, c = 20 has p = 0.061 but a bootstrap interval that excludes 0): P(X >= b; theta)
increases with theta, so tL > 1/2 exactly when P(X >= b; 1/2) < alpha/2, and tU < 1/2 exactly
when P(X <= b; 1/2) < alpha/2; the interval excludes 0 exactly when p < alpha. This is enforced
by construction, not left to rounding: the side of 1/2 is decided with the exact integer tails
(the same ones the p-value uses), and the bisection for tL then runs inside (1/2, 1] or [0, 1/2]
only, on the float log-space tail (math.lgamma binomial coefficients, log-sum-exp) to 2^-46.
The returned p is float(exact fraction).

The AUROC comparison (medbench.stats.paired_auroc, api/compare.py) is different: a paired cluster
bootstrap whose p-value inverts its own percentile interval (the smallest level at which the
interval leaves 0 out), floored at 2 / (R + 1) for R kept replicates and flagged ``p_at_floor``
there; see that module. Exact McNemar has no floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

ALPHA = 0.05
_BISECTIONS = 46


@lru_cache(maxsize=2048)
def _cumulative_comb(m: int) -> tuple[int, ...]:
    """(sum_{i<=x} C(m, i)) for x = 0..m, exact integers."""
    out, total = [], 0
    for i in range(m + 1):
        total += math.comb(m, i)
        out.append(total)
    return tuple(out)


def _tails_at_half(x: int, m: int) -> tuple[int, int]:
    """Numerators over 2^m of P(X <= x) and P(X >= x), X ~ Bin(m, 1/2)."""
    cum = _cumulative_comb(m)
    return cum[x], (1 << m) - (cum[x - 1] if x > 0 else 0)


def mcnemar_exact_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value from the discordant counts b, c (1.0 when b + c = 0)."""
    b, c = int(b), int(c)
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be non-negative")
    m = b + c
    if m == 0:
        return 1.0
    le, ge = _tails_at_half(b, m)
    return float(min(Fraction(1), Fraction(2 * min(le, ge), 1 << m)))


@lru_cache(maxsize=2048)
def _log_comb(m: int) -> np.ndarray:
    i = np.arange(m + 1)
    lg = np.array([math.lgamma(k + 1) for k in range(m + 1)])
    return lg[m] - lg[i] - lg[m - i]


def _lower_bounds_same_m(x: np.ndarray, m: int, alpha: float) -> np.ndarray:
    """Clopper-Pearson lower bounds tL for successes ``x`` (array) out of the same m, batched bisection."""
    x = np.asarray(x, dtype=np.int64)
    out = np.zeros(len(x))
    live = x > 0
    if not live.any():
        return out
    xs = x[live]
    a2 = Fraction(alpha) / 2
    above = np.array([Fraction(_tails_at_half(int(v), m)[1], 1 << m) < a2 for v in xs])  # tL > 1/2
    lo = np.where(above, 0.5, 0.0)
    hi = np.where(above, 1.0, 0.5)
    i = np.arange(m + 1)
    logc = _log_comb(m)
    keep = i[None, :] >= xs[:, None]  # terms of P(X >= x)
    target = math.log(alpha / 2)
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        terms = logc[None, :] + i[None, :] * np.log(mid)[:, None] + (m - i)[None, :] * np.log1p(-mid)[:, None]
        terms = np.where(keep, terms, -np.inf)
        top = terms.max(axis=1)
        log_tail = top + np.log(np.exp(terms - top[:, None]).sum(axis=1))
        ok = log_tail >= target  # mid is at or above tL
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    out[live] = hi  # hi stays strictly above 1/2 when ``above``, at or below 1/2 otherwise
    return out


def clopper_pearson_many(x, m, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson (1 - alpha) intervals for x successes out of m (integer arrays, m >= 1)."""
    x = np.asarray(x, dtype=np.int64).reshape(-1)
    m = np.asarray(m, dtype=np.int64).reshape(-1)
    if x.shape != m.shape or (x < 0).any() or (x > m).any() or (m < 1).any():
        raise ValueError("Clopper-Pearson needs 0 <= x <= m and m >= 1")
    # lower bounds of (x, m) and of (m - x, m) (the upper bound by symmetry), each (x, m) once
    width = int(m.max()) + 1
    keys = np.unique(np.r_[m * width + x, m * width + (m - x)])
    qm, qx = keys // width, keys % width
    bounds = np.empty(len(keys))
    for mm in np.unique(qm):
        rows = np.flatnonzero(qm == mm)
        bounds[rows] = _lower_bounds_same_m(qx[rows], int(mm), alpha)

    def look(xx):
        return bounds[np.searchsorted(keys, m * width + xx)]

    return look(x), 1.0 - look(m - x)


def clopper_pearson(x: int, m: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Clopper-Pearson (1 - alpha) interval for a binomial proportion x / m (m >= 1)."""
    low, high = clopper_pearson_many([x], [m], alpha)
    return float(low[0]), float(high[0])


@dataclass(frozen=True)
class PairedAccuracy:
    b: int  # items only A got right
    c: int  # items only B got right
    n: int  # items
    difference: float  # accuracy(A) - accuracy(B) = (b - c) / n
    ci_low: float
    ci_high: float
    p_value: float  # exact McNemar
    method: str = "exact McNemar test; Clopper-Pearson interval for b/(b+c) mapped to the difference"


def paired_accuracy_many(b, c, n, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised (ci_low, ci_high, p_value) arrays for discordant counts b, c out of n items.

    ``n`` may be a scalar or an array; requires b + c <= n, n >= 1.
    """
    b = np.asarray(b, dtype=np.int64).reshape(-1)
    c = np.asarray(c, dtype=np.int64).reshape(-1)
    n = np.broadcast_to(np.asarray(n, dtype=np.int64), b.shape)
    if b.shape != c.shape or (b < 0).any() or (c < 0).any() or (n < 1).any() or (b + c > n).any():
        raise ValueError("paired comparison needs b, c >= 0, n >= 1 and b + c <= n")
    m = b + c
    low, high = np.zeros(len(b)), np.zeros(len(b))
    some = m > 0
    if some.any():
        t_low, t_high = clopper_pearson_many(b[some], m[some], alpha)
        low[some] = (2.0 * t_low - 1.0) * m[some] / n[some]
        high[some] = (2.0 * t_high - 1.0) * m[some] / n[some]
    p = np.array([mcnemar_exact_p(int(u), int(v)) for u, v in zip(b, c)])
    return low, high, p


def paired_accuracy(b: int, c: int, n: int, alpha: float = ALPHA) -> PairedAccuracy:
    """Exact McNemar p-value and the matching conditional exact interval for accuracy(A) - accuracy(B).

    The interval excludes 0 exactly when p < alpha (see the module docstring). b + c = 0 gives
    the interval [0, 0] and p = 1.
    """
    low, high, p = paired_accuracy_many([b], [c], n, alpha)
    return PairedAccuracy(int(b), int(c), int(n), (int(b) - int(c)) / int(n), float(low[0]), float(high[0]), float(p[0]))


def paired_accuracy_from_correct(correct_a, correct_b, alpha: float = ALPHA) -> PairedAccuracy:
    """The same from two aligned bool arrays of per-item correctness."""
    a = np.asarray(correct_a, dtype=bool).reshape(-1)
    o = np.asarray(correct_b, dtype=bool).reshape(-1)
    if a.shape != o.shape or a.size == 0:
        raise ValueError("two non-empty aligned arrays are needed")
    return paired_accuracy(int((a & ~o).sum()), int((~a & o).sum()), a.size, alpha)
