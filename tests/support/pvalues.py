"""A brute-force reference for the inverted percentile p-value (``medbench.stats.paired_auroc``).

It asks np.percentile itself, level by level: the p-value is the smallest two-sided level alpha at
which ``np.percentile(d, [50 alpha, 100 - 50 alpha])`` leaves 0 out, found by bisection, then
floored at 2 / (R + 1). It shares no code with the implementation, which solves for that level in
closed form.
"""

from __future__ import annotations

import numpy as np


def excludes_zero(d: np.ndarray, alpha: float) -> bool:
    low, high = np.percentile(d, [50 * alpha, 100 - 50 * alpha])
    return bool(low > 0 or high < 0)


def inverted_p_by_bisection(d) -> float:
    d = np.asarray(d, dtype=np.float64)
    if not excludes_zero(d, 1.0):
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if excludes_zero(d, mid) else (mid, hi)
    return hi


def reference_p(d) -> tuple[float, bool]:
    """(published p, at the floor) as documented."""
    floor = 2 / (len(d) + 1)
    raw = inverted_p_by_bisection(d)
    return (floor, True) if raw <= floor + 1e-12 else (raw, False)
