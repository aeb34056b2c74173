"""Wilson score interval for a single proportion k/n: the 95% CI of every accuracy and rate.

Why Wilson and not the Wald interval p +- z sqrt(p(1-p)/n): Wald collapses to [0, 0] at 0/n and
to [1, 1] at n/n (a zero-width interval claiming certainty) and undercovers near the edges; the
percentile bootstrap has the same collapse. Wilson (1927, JASA 22:209) inverts the score test, so
its interval is the set of p for which |k/n - p| <= z sqrt(p(1-p)/n); Brown, Cai and DasGupta
(2001, Statistical Science 16:101) recommend it for all n. Closed form, with p = k/n:

    centre = (p + z^2/(2n)) / (1 + z^2/n)
    half   = z sqrt(p(1-p)/n + z^2/(4n^2)) / (1 + z^2/n)

At the edges the formula's bound is exactly 0 (k = 0) or exactly 1 (k = n); it is set to that
value exactly instead of trusting rounding. 0/1045 -> [0, 0.00366]; 1045/1045 -> [0.99634, 1];
12/12 -> [0.7575, 1].

n = 0 (no items): there is no estimate; the formula itself gives centre 1/2 and half-width 1/2,
i.e. [0, 1] ("nothing is known"), which is what is returned, so a caller never divides by zero and
a displayed interval is honest. The point estimate k/n is the caller's (NaN at n = 0).
"""

from __future__ import annotations

import math
from typing import NamedTuple

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


class WilsonInterval(NamedTuple):
    low: float
    high: float


def wilson_interval(k: int, n: int, z: float = Z95) -> WilsonInterval:
    """Wilson score interval for k successes out of n trials (95% with the default z).

    ``k`` and ``n`` are integers with 0 <= k <= n; n = 0 returns (0.0, 1.0) (see the module
    docstring). Raises ValueError for negative counts or k > n.
    """
    k, n = int(k), int(n)
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"Wilson interval needs 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return WilsonInterval(0.0, 1.0)
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return WilsonInterval(low, high)
