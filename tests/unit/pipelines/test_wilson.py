"""Wilson interval: exact reference values, recomputed here from the score-test definition."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from medbench.stats.wilson import Z95, wilson_interval


def reference(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Roots in p of (k - n p)^2 = z^2 n p (1 - p), the quadratic solved directly."""
    a = n * n + z * z * n
    b = -(2 * k * n + z * z * n)
    c = k * k
    disc = math.sqrt(b * b - 4 * a * c)
    return (-b - disc) / (2 * a), (-b + disc) / (2 * a)


def test_edges_from_the_issue():
    low, high = wilson_interval(0, 1045)
    assert low == 0.0
    assert high == pytest.approx(Z95**2 / (1045 + Z95**2), rel=1e-12)
    assert round(high, 3) == 0.004 and high == pytest.approx(0.00366, abs=5e-6)
    low, high = wilson_interval(1045, 1045)
    assert high == 1.0 and low < 1.0
    assert low == pytest.approx(1045 / (1045 + Z95**2), rel=1e-12)
    assert low == pytest.approx(0.99634, abs=5e-6)
    low, high = wilson_interval(12, 12)
    assert high == 1.0 and round(low, 3) == 0.758


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (1, 2), (3, 10), (500, 1045), (7, 1045), (1040, 1045), (0, 12)])
def test_matches_the_quadratic(k, n):
    low, high = wilson_interval(k, n)
    ref_low, ref_high = reference(k, n)
    assert low == pytest.approx(max(ref_low, 0.0), abs=1e-12)
    assert high == pytest.approx(min(ref_high, 1.0), abs=1e-12)
    assert low <= k / n <= high


def test_score_test_boundary_holds_at_the_bounds():
    k, n = 300, 1045
    for p in wilson_interval(k, n):
        assert (k - n * p) ** 2 == pytest.approx(Z95**2 * n * p * (1 - p), rel=1e-9)


def test_n_zero_and_bad_input():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    for k, n in [(-1, 5), (6, 5), (0, -1)]:
        with pytest.raises(ValueError):
            wilson_interval(k, n)


def test_is_inside_unit_interval_everywhere():
    for n in range(1, 60):
        for k in range(n + 1):
            low, high = wilson_interval(k, n)
            assert 0.0 <= low <= Fraction(k, n) <= high <= 1.0
