"""``api.compare`` against straightforward references on hand-made predictions.

The references are the obvious slow implementations: a Python loop over bootstrap replicates
drawing exactly what the module docstring says, scikit-learn's ``roc_auc_score`` on the
concatenated resampled windows, scipy's exact binomial test, and a published McNemar example.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.stats import binomtest
from sklearn.metrics import roc_auc_score

from api.compare import (
    ComparisonError,
    auroc,
    compare_files,
    mcnemar_exact,
    paired_accuracy,
    paired_auroc,
)
from support.pvalues import reference_p

# --------------------------------------------------------------------------- McNemar


def test_mcnemar_textbook_example() -> None:
    # Fagerland, Lydersen and Laake, BMC Med Res Methodol 2013;13:91, Table 2 (Bentur et al. 2009):
    # discordant pairs 1 and 7; the exact conditional McNemar test gives p = 0.070 (= 18/256).
    assert mcnemar_exact(1, 7) == pytest.approx(0.0703125, abs=1e-15)
    assert round(mcnemar_exact(7, 1), 3) == 0.070


@pytest.mark.parametrize("b,c", [(0, 0), (0, 1), (3, 3), (5, 0), (10, 25), (40, 60), (200, 150), (0, 60)])
def test_mcnemar_is_the_exact_two_sided_binomial_test(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------------- accuracy


def test_identical_runs_give_zero_with_an_interval_containing_zero() -> None:
    correct = np.random.default_rng(1).random(300) < 0.6
    c = paired_accuracy(correct, correct.copy(), replicates=500, seed=3)
    assert c.difference == 0.0
    assert c.ci_low <= 0.0 <= c.ci_high
    assert c.p_value == 1.0
    assert (c.a_only_correct, c.b_only_correct) == (0, 0)


def test_a_clearly_better_model_has_an_interval_above_zero() -> None:
    rng = np.random.default_rng(2)
    b = rng.random(400) < 0.5
    a = b | (rng.random(400) < 0.8)  # right wherever b is, and on most other items too
    c = paired_accuracy(a, b, replicates=1000, seed=5)
    assert c.difference == pytest.approx(a.mean() - b.mean())
    assert c.ci_low > 0
    assert c.p_value < 1e-10
    assert c.b_only_correct == 0 and c.a_only_correct == int((a & ~b).sum())
    flipped = paired_accuracy(b, a, replicates=1000, seed=5)
    assert flipped.ci_high < 0 and flipped.p_value == c.p_value


def test_accuracy_interval_is_the_exact_conditional_one_matching_mcnemar() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.random(257) < 0.55, rng.random(257) < 0.45
    c = paired_accuracy(a, b, replicates=300, seed=11)
    discordant = int((a & ~b).sum()), int((~a & b).sum())
    assert c.p_value == pytest.approx(binomtest(min(discordant), sum(discordant), 0.5).pvalue, rel=1e-12)
    assert (c.ci_low > 0 or c.ci_high < 0) == (c.p_value < 0.05)


def test_b9_c20_p_is_0061_and_the_interval_includes_zero() -> None:
    """The issue's case: a percentile bootstrap interval excluded 0 next to p = 0.061."""
    n = 1045
    a = np.zeros(n, dtype=bool)
    b = np.zeros(n, dtype=bool)
    a[:9] = True
    b[9:29] = True
    a[29:500] = b[29:500] = True
    c = paired_accuracy(a, b, replicates=2000, seed=20261029)
    assert (c.a_only_correct, c.b_only_correct) == (9, 20)
    assert c.p_value == pytest.approx(0.0614, abs=5e-4)
    assert c.ci_low < 0 < c.ci_high
    assert "McNemar" in c.method and "Clopper-Pearson" in c.method


# --------------------------------------------------------------------------- AUROC


def _loop_auroc(scores_a, scores_b, labels, subjects, replicates: int, seed: int) -> tuple[np.ndarray, float, float, float]:
    """Resample subjects exactly as documented; score each resample with scikit-learn."""
    ids, index = np.unique(subjects, return_inverse=True)
    draws = np.random.default_rng(seed).integers(0, len(ids), size=(replicates, len(ids)))
    members = [np.flatnonzero(index == k) for k in range(len(ids))]
    diffs = []
    for r in range(replicates):
        rows = np.concatenate([members[k] for k in draws[r]])
        if len(set(labels[rows].tolist())) < 2:
            continue
        diffs.append(roc_auc_score(labels[rows], scores_a[rows]) - roc_auc_score(labels[rows], scores_b[rows]))
    d = np.asarray(diffs)
    low, high = np.percentile(d, [2.5, 97.5])
    p = reference_p(d)[0]  # the percentile interval inverted, by bisection on np.percentile
    return d, float(low), float(high), float(p)


def _windows(seed: int, n: int, subjects: int, prevalence: float, strength_a: float, strength_b: float):
    rng = np.random.default_rng(seed)
    subject = rng.integers(100, 100 + subjects, size=n)
    y = (rng.random(n) < prevalence).astype(int)
    # rounded scores: plenty of ties, inside and across classes
    a = np.round(rng.normal(strength_a * y, 1.0), 1)
    b = np.round(rng.normal(strength_b * y, 1.0), 1)
    return a, b, y, subject


@pytest.mark.parametrize("prevalence", [0.2, 0.75])  # both sides of the smaller-class branch
def test_auroc_compare_equals_sklearn_on_the_same_resamples(prevalence: float) -> None:
    a, b, y, subject = _windows(7, 400, 23, prevalence, 1.2, 0.6)
    c = paired_auroc(a, b, y, subject, replicates=200, seed=17)
    d, low, high, p = _loop_auroc(a, b, y, subject, 200, 17)
    assert c.value_a == pytest.approx(roc_auc_score(y, a), abs=1e-12)
    assert c.value_b == pytest.approx(roc_auc_score(y, b), abs=1e-12)
    assert c.difference == pytest.approx(roc_auc_score(y, a) - roc_auc_score(y, b), abs=1e-12)
    assert (c.ci_low, c.ci_high) == pytest.approx((low, high), abs=1e-12)
    assert c.p_value == pytest.approx(p, abs=1e-12)
    assert c.dropped_replicates == 200 - len(d)


def test_auroc_replicates_with_one_class_are_left_out_and_counted() -> None:
    # three subjects, one holding every positive: many resamples miss it
    y = np.array([1, 1, 0, 0, 0, 0, 0, 0, 0])
    subject = np.array([1, 1, 1, 2, 2, 2, 3, 3, 3])
    a = np.array([0.9, 0.8, 0.1, 0.3, 0.2, 0.4, 0.5, 0.1, 0.2])
    b = np.array([0.5, 0.4, 0.3, 0.6, 0.2, 0.1, 0.3, 0.7, 0.2])
    c = paired_auroc(a, b, y, subject, replicates=300, seed=2)
    d, low, high, p = _loop_auroc(a, b, y, subject, 300, 2)
    assert c.dropped_replicates == 300 - len(d) > 0
    assert (c.ci_low, c.ci_high, c.p_value) == pytest.approx((low, high, p), abs=1e-12)


def test_identical_auroc_runs_give_zero_and_p_one() -> None:
    a, _, y, subject = _windows(8, 300, 20, 0.3, 1.0, 0.0)
    c = paired_auroc(a, a.copy(), y, subject, replicates=300, seed=1)
    assert c.difference == 0.0 and c.ci_low == 0.0 == c.ci_high
    assert c.p_value == 1.0


def test_a_clearly_better_score_has_an_auroc_interval_above_zero() -> None:
    a, b, y, subject = _windows(9, 2000, 60, 0.2, 3.0, 0.2)
    c = paired_auroc(a, b, y, subject, replicates=500, seed=4)
    assert c.ci_low > 0.3
    assert c.p_value == pytest.approx(2 / 501)  # no replicate at or below 0


def test_auroc_point_estimate_matches_sklearn_with_ties() -> None:
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 500)
    s = rng.integers(0, 6, 500).astype(float)
    assert auroc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_one_class_is_refused() -> None:
    with pytest.raises(ComparisonError):
        paired_auroc([0.1, 0.2], [0.3, 0.4], [0, 0], [1, 2], replicates=10, seed=0)


# --------------------------------------------------------------------------- from files


def _choice_file(path: Path, ids: list[str], correct: list[bool]) -> Path:
    pq.write_table(pa.table({
        "instance_id": ids, "prediction": ["A"] * len(ids), "label": ["A" if c else "B" for c in correct],
        "correct": correct, "parse_status": ["ok"] * len(ids), "raw_output": ["정답: A"] * len(ids),
    }), path)
    return path


def test_files_are_aligned_on_shared_instance_ids_in_sorted_order(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    ids = [f"q{i:03d}" for i in range(200)]
    truth = rng.random(200) < 0.5
    a_correct = truth | (rng.random(200) < 0.3)
    # b's file: shuffled, missing 20 items, with 5 items a does not have; labels agree on shared items
    order = rng.permutation(200)[:180]
    b_ids = [ids[i] for i in order] + [f"x{i}" for i in range(5)]
    b_correct = [bool(truth[i]) for i in order] + [True] * 5
    path_a = tmp_path / "a.parquet"
    pq.write_table(pa.table({"instance_id": ids, "label": ["L"] * 200, "correct": a_correct.tolist()}), path_a)
    path_b = tmp_path / "b.parquet"
    pq.write_table(pa.table({"instance_id": b_ids, "label": ["L"] * 185, "correct": b_correct}), path_b)
    c = compare_files("choice", path_a, path_b, replicates=400, seed=9)
    shared = sorted(ids[i] for i in order)
    expected = paired_accuracy(np.array([a_correct[ids.index(i)] for i in shared]),
                               np.array([truth[ids.index(i)] for i in shared]), 400, 9)
    assert c == expected and c.n_shared == 180


def test_files_with_no_shared_item_or_different_labels_are_refused(tmp_path: Path) -> None:
    a = _choice_file(tmp_path / "a.parquet", ["q1", "q2"], [True, False])
    b = _choice_file(tmp_path / "b.parquet", ["q3", "q4"], [True, True])
    with pytest.raises(ComparisonError, match="share no items"):
        compare_files("choice", a, b, 10, 0)
    c = _choice_file(tmp_path / "c.parquet", ["q1", "q2"], [False, False])  # label of q1 differs
    with pytest.raises(ComparisonError, match="gold label"):
        compare_files("choice", a, c, 10, 0)
