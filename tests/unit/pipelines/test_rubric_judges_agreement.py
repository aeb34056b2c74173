"""Two judges' results on the same answers: ``/v1/compare``'s ``judges`` block (issue 44), their
majority verdicts' agreement per criterion id, overall and as Cohen's kappa."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medbench.kinds.rubric import judges_agreement


def _write(path, rows):
    """rows: (instance_id, answer, {criterion: [met per judge sample]})."""
    out = {"instance_id": [], "answer": [], "criterion_id": [], "met": []}
    for iid, answer, grades in rows:
        out["instance_id"].append(iid)
        out["answer"].append(answer)
        out["criterion_id"].append([c for c, ms in grades.items() for _ in ms])
        out["met"].append([m for ms in grades.values() for m in ms])
    pq.write_table(pa.table(out), path)


def test_majority_verdicts_agree_per_criterion_on_identical_answers_only(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    _write(a, [
        ("q1", "x", {"gold": [True, True, False], "reasoning": [False, False, False]}),
        ("q2", "y", {"gold": [True, True, True], "reasoning": [True, False, True]}),
        ("q3", "z", {"gold": [False, False, False], "reasoning": [True, True, True]}),
        ("q4", "w", {"gold": [True, True, True], "reasoning": [True, True, True]}),  # answer differs in b
    ])
    _write(b, [
        ("q1", "x", {"gold": [True], "reasoning": [True]}),     # gold agrees, reasoning does not
        ("q2", "y", {"gold": [True], "reasoning": [True]}),     # both agree
        ("q3", "z", {"gold": [False], "reasoning": [True]}),    # both agree
        ("q4", "other", {"gold": [False], "reasoning": [False]}),  # another answer: not paired
        ("q5", "v", {"gold": [True], "reasoning": [True]}),     # not in a
    ])
    got = judges_agreement(a, b)
    assert got is not None
    assert (got.n_items, got.n_grades) == (3, 6)
    assert got.agreement == pytest.approx(5 / 6)
    by = {c.criterion: c for c in got.criteria}
    assert [c.criterion for c in got.criteria] == ["gold", "reasoning"]
    assert (by["gold"].n, by["gold"].agreement, by["gold"].kappa) == (3, 1.0, 1.0)
    assert by["reasoning"].agreement == pytest.approx(2 / 3)
    # reasoning: a = [F, T, T], b = [T, T, T]: observed 2/3, expected 2/3 -> kappa 0
    assert by["reasoning"].kappa == pytest.approx(0.0)
    # overall: a = [T, F, T, T, F, T] vs b = [T, T, T, T, F, T]: po 5/6, pe (5/6)(4/6) + (1/6)(2/6) = 22/36
    assert got.kappa == pytest.approx((5 / 6 - 22 / 36) / (1 - 22 / 36))


def test_results_without_a_shared_answer_give_no_agreement(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    _write(a, [("q1", "x", {"gold": [True]})])
    _write(b, [("q1", "another model's answer", {"gold": [True]})])
    assert judges_agreement(a, b) is None
