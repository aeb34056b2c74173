"""Exact McNemar and its conditional exact interval agree with each other everywhere."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from medbench.stats.paired import clopper_pearson, mcnemar_exact_p, paired_accuracy, paired_accuracy_many


def binom_tail_ge(x: int, m: int, theta: float) -> float:
    return sum(math.comb(m, i) * theta**i * (1 - theta) ** (m - i) for i in range(x, m + 1))


def test_issue_example_b9_c20():
    r = paired_accuracy(9, 20, 1045)
    exact = 2 * Fraction(sum(math.comb(29, i) for i in range(10)), 2**29)
    assert r.p_value == float(exact) and round(r.p_value, 3) == 0.061
    assert r.ci_low < 0 < r.ci_high
    assert r.difference == pytest.approx(-11 / 1045)


def test_clopper_pearson_solves_the_tail_equations():
    for x, m in [(9, 29), (1, 10), (5, 5), (100, 300), (0, 7)]:
        low, high = clopper_pearson(x, m)
        if x > 0:
            assert binom_tail_ge(x, m, low) == pytest.approx(0.025, rel=1e-9)
        else:
            assert low == 0.0
        if x < m:
            assert 1 - binom_tail_ge(x + 1, m, high) == pytest.approx(0.025, rel=1e-9)
        else:
            assert high == 1.0


def test_no_discordant_items():
    r = paired_accuracy(0, 0, 10)
    assert (r.ci_low, r.ci_high, r.p_value) == (0.0, 0.0, 1.0)
    assert mcnemar_exact_p(0, 0) == 1.0


@pytest.mark.slow  # about 13 s of CPU (21 s wall on the shared machine)
def test_interval_excludes_zero_iff_p_below_005_for_every_b_c_up_to_200():
    b, c = np.meshgrid(np.arange(201), np.arange(201))
    b, c = b.ravel(), c.ravel()
    low, high, p = paired_accuracy_many(b, c, 1045)
    assert len(b) == 40_401
    excludes = (low > 0) | (high < 0)
    assert np.array_equal(excludes, p < 0.05)
    assert (low <= (b - c) / 1045).all() and ((b - c) / 1045 <= high).all()
