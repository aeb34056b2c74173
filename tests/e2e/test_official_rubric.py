"""The official tier on a rubric task (issue 44): an author's package returns free-text answers for
clinicalqa-open@0 in the sandbox, and medbench judges them with the task's judge (the demo's simulated
one on demo data) by the path that regrades stored answers, publishing an official rubric result.

The package here carries the stored answers of ``medbench-sim-open/concise`` (the demo's replayed
answerer): the same answers, the same items and the same judge give the same verdicts, so the
official result's score must equal medbench's own result of that model, and ``/v1/compare`` of the
two finds every item's score equal. ``medbench reproduce`` reruns the
package and rebuilds the same predictions from the judge's stored replies.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from support.commands import run_medbench
from support.paths import REPO
from support.wheels import build_wheel

pytestmark = pytest.mark.slow
TASK = "clinicalqa-open@0"
MODEL = "medbench-sim-open/concise"
OUTPUTS = REPO / "specs" / "models" / "medbench-sim-open" / "outputs" / "concise.jsonl"


def _metric(result: dict, name: str) -> float:
    return next(m["value"] for m in result["metrics"] if m["name"] == name)


def test_an_official_package_answers_a_rubric_task_and_medbench_judges_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run_medbench("materialize", "--demo", "--task", TASK, "--model", MODEL, data=data)
    answers = {r["instance_id"]: r["output"] for r in map(json.loads, OUTPUTS.read_text("utf-8").splitlines())}
    source = (f"ANSWERS = {answers!r}\n\ndef predict(instances, context):\n"
              "    assert context['answer_field'] == 'answer' and context['kind'] == 'rubric'\n"
              "    for i in instances:\n"
              "        assert set(i) == {'instance_id', 'prompt'}  # the prompt only: never the rubric\n"
              "        yield {'instance_id': i['instance_id'], 'answer': ANSWERS[i['instance_id']]}\n")
    wheel = build_wheel(tmp_path, source, name="concise_answers")
    ran = run_medbench("official", "run", "--package", str(wheel), "--task", TASK, "--model", MODEL,
                       "--submitted-by", "medbench-sim-open", data=data)
    assert ran.stdout.startswith("official result "), ran.stdout + ran.stderr
    assert "judge medbench-sim-open/judge:" in ran.stderr  # medbench's judge graded the package's answers
    with TestClient(create_app(data)) as c:
        rows = [r for r in c.get("/v1/leaderboard", params={"task": TASK}).json()["rows"] if r["model"]["slug"] == MODEL]
        assert sorted(r["tier"] for r in rows) == ["baseline", "official"]
        official = next(r["run_id"] for r in rows if r["tier"] == "official")
        baseline = next(r["run_id"] for r in rows if r["tier"] == "baseline")
        result, own = c.get(f"/v1/results/{official}").json(), c.get(f"/v1/results/{baseline}").json()
        assert result["judge"]["model"] == own["judge"]["model"] == "medbench-sim-open/judge"
        assert result["judge"]["samples"] == 3
        assert _metric(result, "rubric_score") == pytest.approx(_metric(own, "rubric_score"))
        assert _metric(result, "judge_agreement") == pytest.approx(_metric(own, "judge_agreement"))
        usage = result["usage"]  # the package's answering and medbench's judging apart
        assert usage["hardware"].startswith("medbench sandbox") and usage["answering"] and usage["judging"]
        assert usage["wall_seconds"] == pytest.approx(usage["answering"]["wall_seconds"]
                                                      + usage["judging"]["wall_seconds"], abs=2e-3)
        assert result["config"]["official"]["installed"][0]["name"] == "concise-answers"
        assert result["config"]["judge_replies_unread"] == 0
        compared = c.get("/v1/compare", params={"a": official, "b": baseline}).json()
        assert compared["difference"] == pytest.approx(0.0) and compared["n_shared"] == 1045
        # the same answers and the same judge: the same verdicts, so every item's score is equal
        assert compared["ci_low"] == pytest.approx(0.0) and compared["ci_high"] == pytest.approx(0.0)
    reproduced = run_medbench("reproduce", official, "--api-url", "http://127.0.0.1:9", data=data, check=False)
    assert reproduced.returncode == 0 and "IDENTICAL" in reproduced.stdout, reproduced.stdout + reproduced.stderr
