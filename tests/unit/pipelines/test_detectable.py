"""The smallest detectable difference (docs/statistics.md, "Smallest detectable difference")
against simulated paired comparisons: at the computed delta, the test rejects about 80% of the time."""

from __future__ import annotations

import math

import numpy as np

from medbench.kinds.choice import mcnemar_exact
from medbench.stats.detectable import (bootstrap_detectable, mcnemar_detectable, median_discordant_rate,
                                        median_pair_sd)
from medbench.stats.paired_auroc import percentile_test


def test_mcnemar_formula_gives_80_percent_power_in_simulation():
    rng = np.random.default_rng(7)
    n, psi, sims = 1045, 0.2, 2000
    delta = mcnemar_detectable(psi, n)
    assert 0.034 < delta < 0.04  # (1.96 + 0.84) sqrt(0.2 / 1045) = 0.0387 when delta^2 is negligible
    # per item: discordant with probability psi, then "only A right" with probability (1 + delta/psi) / 2
    b = rng.binomial(n, psi * (1 + delta / psi) / 2, size=sims)
    c = rng.binomial(n - b, (psi * (1 - delta / psi) / 2) / (1 - psi * (1 + delta / psi) / 2))
    power = np.mean([mcnemar_exact(int(x), int(y)) < 0.05 for x, y in zip(b, c, strict=True)])
    se = math.sqrt(0.8 * 0.2 / sims)
    assert abs(power - 0.8) < 3 * se + 0.02, power  # the exact test is slightly conservative


def test_bootstrap_formula_gives_80_percent_power_with_the_percentile_test():
    """A difference estimate with SD s, its bootstrap replicates around it: the percentile test
    (``/v1/compare``'s) at delta = (z + z) s rejects about 80% of the time."""
    rng = np.random.default_rng(8)
    s, sims = 0.02, 1000
    delta = bootstrap_detectable(s)
    assert math.isclose(delta, (1.959964 + 0.841621) * s, rel_tol=1e-5)
    rejected = 0
    for _ in range(sims):
        estimate = rng.normal(delta, s)
        rejected += percentile_test(rng.normal(estimate, s, 500)).p_value < 0.05
    power = rejected / sims
    assert abs(power - 0.8) < 3 * math.sqrt(0.8 * 0.2 / sims), power


def test_the_inputs_are_medians_over_pairs():
    correct = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 1, 1]], dtype=bool)
    # pairs: (0,1) disagree on 1 of 4, (0,2) on 3, (1,2) on 4 -> median 3/4
    assert median_discordant_rate(correct) == 0.75
    reps = np.random.default_rng(1).normal(size=(4000, 3)) * np.array([1.0, 2.0, 3.0])
    sds = sorted([math.sqrt(1 + 4), math.sqrt(1 + 9), math.sqrt(4 + 9)])
    assert abs(median_pair_sd(reps) - sds[1]) < 0.1
