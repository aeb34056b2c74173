"""A leaderboard row whose judge failed its scorecard (issue 44): its ``judge_kappa`` below the task
spec's ``min_judge_kappa`` gives a note naming the judge, its kappa and the threshold; a passing judge,
a result without a scorecard or a task without a threshold gives none."""

from __future__ import annotations

from types import SimpleNamespace

import msgspec
from support.api_data import RUNS, make_record

from api.judge_checks import judge_warnings, min_judge_kappa
from medbench.layout import DataDir
from medbench.records import JudgeRef, MetricValue

SPEC = {"slug": "clinicalqa-open", "rubric": {"judge": "judges/strict", "min_judge_kappa": 0.6}}


def _row(data: DataDir, label: str, kappa: float | None, judge: str | None = "judges/strict"):
    record = make_record(data, label, RUNS[label])
    metrics = [*record.metrics, *([MetricValue("judge_kappa", kappa, kappa - 0.1, kappa + 0.1)] if kappa is not None else [])]
    ref = JudgeRef(model=judge, revision="1", prompt_sha256="p" * 64, samples=3) if judge else None
    record = msgspec.structs.replace(record, metrics=metrics, judge=ref)
    return SimpleNamespace(run_id=record.run_id, record=record)


def test_a_judge_below_the_threshold_is_named_with_its_kappa(tmp_path):
    data = DataDir(tmp_path)
    failing = _row(data, "medgemma-cqa0", 0.41)
    rows = [_row(data, "gptoss-cqa0", 0.72), failing, _row(data, "random-cqa0", None),
            _row(data, "medgemma-cqa1", 0.1, judge=None)]
    (w,) = judge_warnings(SPEC, rows)
    assert (w.run_id, w.model, w.judge, w.kappa, w.min_kappa) == (
        failing.run_id, "kgpu/medgemma-27b", "judges/strict", 0.41, 0.6)
    assert "judges/strict" in w.message and "0.410" in w.message and "0.6" in w.message


def test_no_threshold_no_note(tmp_path):
    data = DataDir(tmp_path)
    assert min_judge_kappa({"slug": "clinicalqa"}) is None
    assert judge_warnings({"slug": "clinicalqa"}, [_row(data, "medgemma-cqa0", 0.1)]) == []
