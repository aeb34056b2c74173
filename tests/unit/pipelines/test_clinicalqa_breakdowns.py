"""ClinicalQA breakdowns: accuracy by category, purpose and source, each group's Wilson interval
(checked against the closed form computed here, and against a direct count), and the published
multiplicity caveat."""

from __future__ import annotations

import math

import numpy as np
import pytest

from api.render import BREAKDOWNS_CAVEAT
from pipelines.tasks.clinicalqa.score import breakdowns

Z = 1.959963984540054


def wilson(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return (0.0 if k == 0 else centre - half), (1.0 if k == n else centre + half)


def test_accuracy_by_each_field_with_wilson_intervals() -> None:
    rng = np.random.default_rng(1)
    n = 300
    correct = rng.random(n) < 0.4
    fields = {"category": list(rng.choice(["Dermatology", "Nephrology", "Cardiology"], n)),
              "purpose": list(rng.choice(["진단", "검사", "치료"], n)),
              "source": ["demo"] * 299 + ["other"]}
    out = breakdowns(correct, fields)
    assert list(out) == ["category", "purpose", "source"]
    for name, rows in out.items():
        assert [b.group for b in rows] == sorted(set(fields[name]))
        assert sum(b.n for b in rows) == n
        for b in rows:
            mine = correct[np.asarray(fields[name]) == b.group]
            assert (b.n, b.metric.value) == (mine.size, pytest.approx(mine.mean()))
            low, high = wilson(int(mine.sum()), int(mine.size))
            assert (b.metric.ci_low, b.metric.ci_high) == (pytest.approx(low), pytest.approx(high))
            assert b.metric.method == "wilson" and b.metric.name == "accuracy"
    single = out["source"][1]
    assert single.n == 1 and single.metric.ci_high - single.metric.ci_low > 0.7  # one item: nearly nothing known


def test_the_caveat_says_the_intervals_are_per_group() -> None:
    assert "not simultaneous" in BREAKDOWNS_CAVEAT and "multiplicity" in BREAKDOWNS_CAVEAT
