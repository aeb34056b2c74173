"""The paired AUROC p-value and its percentile interval come from one procedure and never disagree.

The audit's boundary case: 25 of 1,000 replicate differences at or below 0 put numpy's 2.5th
percentile (interpolated between the 25th and 26th smallest) above 0, while the count-based
bootstrap p-value said 2 * 26 / 1001 = 0.052. The p-value now inverts the interval, so
p < 0.05 exactly when the 95% interval excludes 0, here and at every level; a p at the floor
2/(R+1) is flagged, never shown as exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from medbench.kinds.score import paired_auroc
from medbench.stats.paired_auroc import bootstrap_p_value, paired_auroc_difference, percentile_test
from support.pvalues import excludes_zero, reference_p


def _boundary() -> np.ndarray:
    """1,000 differences, 25 of them <= 0 (one exactly 0), shuffled."""
    rng = np.random.default_rng(0)
    d = np.concatenate([-rng.uniform(0.001, 0.02, 24), [0.0], rng.uniform(0.002, 0.05, 975)])
    return rng.permutation(d)


def test_the_audit_boundary_case_agrees() -> None:
    d = _boundary()
    assert int((d <= 0).sum()) == 25
    low, high = np.percentile(d, [2.5, 97.5])
    assert low > 0  # the published interval excludes 0 ...
    assert bootstrap_p_value(d) < 0.05  # ... so the p-value says so too (was 0.052)
    t = percentile_test(d)
    assert (t.ci_low, t.ci_high) == (low, high) and t.p_value < 0.05 and not t.p_at_floor
    assert t.p_value == pytest.approx(reference_p(d)[0], abs=1e-12)


def test_one_more_difference_below_zero_gives_an_interval_with_zero_and_p_above_005() -> None:
    d = np.sort(_boundary())
    d[25] = -0.0001  # 26 at or below 0: the 2.5th percentile (index 24.975) is now <= 0
    low, _ = np.percentile(d, [2.5, 97.5])
    t = percentile_test(d)
    assert low <= 0 and t.p_value >= 0.05


@pytest.mark.parametrize("seed", range(60))
def test_interval_excludes_zero_iff_p_below_005_over_many_seeds(seed: int) -> None:
    """Real paired bootstraps, scaled so that many land near the boundary, and raw draws of
    differences (with ties at 0) at every level, against a brute-force inversion of np.percentile."""
    rng = np.random.default_rng(seed)
    n, subjects = 160, 30
    subject = rng.integers(0, subjects, n)
    y = (rng.random(n) < 0.35).astype(int)
    a = np.round(rng.normal(y * rng.uniform(0.2, 1.2), 1.0), 1)
    b = np.round(rng.normal(y * rng.uniform(0.2, 1.2), 1.0), 1)
    c = paired_auroc(a, b, y, subject, replicates=400, seed=seed)
    assert (c.ci_low > 0 or c.ci_high < 0) == (c.p_value < 0.05)
    d = paired_auroc_difference(a, b, y, subject, 400, seed)
    assert d is not None and (d.p_value, d.p_at_floor) == (c.p_value, c.p_at_floor)
    draws = rng.normal(rng.normal(0, 0.02), 0.01, size=int(rng.integers(40, 2500)))
    if seed % 3 == 0:
        draws = np.round(draws, 3)  # ties, some exactly at 0
    for alpha in (0.01, 0.05, 0.1, 0.32):
        t = percentile_test(draws, alpha)
        assert excludes_zero(draws, alpha) == (t.ci_low > 0 or t.ci_high < 0) == (t.p_value < alpha)
    p, at_floor = reference_p(draws)
    t = percentile_test(draws)
    assert t.p_at_floor == at_floor and t.p_value == pytest.approx(p, abs=1e-9)


def test_a_p_at_the_floor_is_flagged_and_an_exact_test_has_none() -> None:
    d = np.linspace(0.01, 0.2, 999)  # every difference above 0
    t = percentile_test(d)
    assert t.p_value == 2 / 1000 and t.p_at_floor
    assert not percentile_test(np.linspace(-0.05, 0.2, 999)).p_at_floor
    rng = np.random.default_rng(9)
    subject = rng.integers(0, 60, 2000)
    y = (rng.random(2000) < 0.2).astype(int)
    a, b = rng.normal(3.0 * y, 1.0), rng.normal(0.2 * y, 1.0)
    c = paired_auroc(a, b, y, subject, replicates=500, seed=4)
    assert c.p_at_floor and c.p_value == 2 / 501
    from medbench.kinds.choice import paired_accuracy
    exact = paired_accuracy(np.ones(500, bool), np.zeros(500, bool), 100, 1)
    assert exact.p_value < 1e-100 and exact.p_at_floor is False


def test_identical_differences_give_p_one() -> None:
    t = percentile_test(np.zeros(300))
    assert (t.ci_low, t.ci_high, t.p_value, t.p_at_floor) == (0.0, 0.0, 1.0, False)


def test_with_39_kept_replicates_or_fewer_a_p_below_005_is_still_a_bound() -> None:
    """The floor 2/(R+1) is >= 0.05 for R <= 39: an interval above 0 gets p just below 0.05, flagged
    as a bound (before, it read as an exact p = 0.04999 with p_at_floor false)."""
    for r in (10, 39):
        t = percentile_test(np.linspace(0.01, 0.1, r))
        assert t.ci_low > 0 and t.p_value < 0.05 and t.p_at_floor is True
    t = percentile_test(np.linspace(0.01, 0.1, 40))  # floor 2/41 < 0.05: an ordinary floor
    assert t.p_at_floor is True and t.p_value == 2 / 41
