"""Rubric tasks end to end (issue 44): clinicalqa-open@0 materialized on demo data, then regraded by a
second judge without calling the answering model; the board and lookups stay the task's judge's,
``?judge=`` reaches the other, and ``/v1/compare`` pairs the two judges' results on the same answers."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from pipelines.engine import evaluate as engine
from pipelines.engine.release import publish_results
from support.paths import REPO
from support.plugins import specs as load_specs
from medbench.layout import DataDir

pytestmark = pytest.mark.slow
TASK = "clinicalqa-open@0"
OTHER = "medbench-sim-open/judge-exact"
MODELS = ("medbench-sim-open/concise", "medbench-sim-open/hedging")


def test_a_second_judge_regrades_stored_answers_and_is_reached_with_judge(tmp_path: Path, monkeypatch) -> None:
    data = DataDir(tmp_path / "data")
    env = {**os.environ, "MEDBENCH_DATA": str(data.root), "PYTHONPATH": str(REPO)}
    args = [sys.executable, "-m", "pipelines.cli.main", "materialize", "--demo", "--task", TASK]
    for m in MODELS:
        args += ["--model", m]
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    monkeypatch.setenv("MEDBENCH_DATA", str(data.root))
    specs = load_specs()
    answering_calls: list[str] = []
    regraded = {}
    for m in MODELS[:1]:  # the engine's steps, the answering backend counted; MODELS[1] by the CLI below
        ev = engine.resolve_evaluation(specs, data, TASK, m, judge=OTHER)
        assert ev.judge is not None and ev.judge.slug == OTHER
        original = engine.resolve_evaluation(specs, data, TASK, m)
        assert ev.run_id != original.run_id  # the judge is part of a rubric run id
        backend = ev.backend

        class Counting:
            def __getattr__(self, name):
                return getattr(backend, name)

            def text_generator(self, *a, **k):
                answering_calls.append(m)
                return backend.text_generator(*a, **k)

        ev = replace(ev, backend=Counting())
        engine.make_predictions(ev, data, lambda s: None)
        regraded[m] = (original.run_id, engine.compute_metrics(ev, specs, data, lambda s: None))
    assert answering_calls == []  # every answer was stored: only the judge ran
    publish_results(specs, data, lambda s: None)
    m = MODELS[1]  # `medbench eval MODEL TASK --judge SLUG`, the API unreachable: regraded locally
    cli = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "eval", m, TASK, "--judge", OTHER,
                          "--api-url", "http://127.0.0.1:9", "--json"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0, cli.stdout[-2000:] + cli.stderr[-2000:]
    import json

    said = json.loads(cli.stdout)
    assert said["status"] == "regraded" and said["answering_called"] is False and said["judge"] == OTHER
    assert "the answering model is not called" in cli.stderr
    assert said["run_id"] == engine.resolve_evaluation(specs, data, TASK, m, judge=OTHER).run_id
    regraded[m] = (engine.resolve_evaluation(specs, data, TASK, m).run_id, engine.existing_result(data, said["run_id"]))
    from pipelines.cli.leaderboards import render_leaderboards

    board_text = render_leaderboards(data)  # what `medbench demo` prints: the judge and its agreement
    assert "judged by medbench-sim-open/judge" in board_text and "judge agr." in board_text
    assert not any(rec.run_id in board_text for _, rec in regraded.values())  # the task's own judge only
    assert all(orig in board_text for orig, _ in regraded.values())
    with TestClient(create_app(data.root)) as client:
        board = client.get(f"/v1/leaderboard?task={TASK}").json()
        assert {r["run_id"] for r in board["rows"]} == {orig for orig, _ in regraded.values()}
        other = client.get(f"/v1/leaderboard?task={TASK}&judge={OTHER}").json()
        assert {r["run_id"] for r in other["rows"]} == {rec.run_id for _, rec in regraded.values()}
        for body in (board, other):  # a row whose judge's kappa is below min_judge_kappa (0.6) carries a note
            kappas = {}
            for r in body["rows"]:
                metrics = client.get(f"/v1/results/{r['run_id']}").json()["metrics"]
                kappas[r["run_id"]] = next((x["value"] for x in metrics if x["name"] == "judge_kappa"), None)
            failing = {rid for rid, k in kappas.items() if k is not None and k < 0.6}
            assert {w["run_id"] for w in body.get("judge_warnings", [])} == failing
            assert all(w["min_kappa"] == 0.6 and w["judge"] in w["message"] for w in body.get("judge_warnings", []))
        task_page = client.get("/tasks/clinicalqa-open?version=0").text
        assert ('id="judge-warnings"' in task_page) == bool(board.get("judge_warnings"))
        m = MODELS[0]
        found = client.get(f"/v1/lookup?model={m}&task={TASK}&judge={OTHER}").json()
        assert found["status"] == "evaluated" and found["result"]["judge"]["model"] == OTHER
        assert client.get(f"/v1/lookup?model={m}&task={TASK}").json()["result"]["judge"]["model"] != OTHER
        bad = client.get(f"/v1/lookup?model=medbench/random&task=clinicalqa@0&judge={OTHER}")
        # a task no judge grades: no result is by that judge (as ?tier= with no match), not a 400
        assert bad.status_code == 200 and bad.json()["status"] == "not_evaluated"
        orig, rec = regraded[m]
        compared = client.get(f"/v1/compare?a={orig}&b={rec.run_id}").json()
        assert compared["n_shared"] == 1045 and compared["metric"] == "rubric_score"
        assert compared["ci_low"] <= compared["difference"] <= compared["ci_high"]
        judges = compared["judges"]  # the two judges on the same answers, criterion by criterion
        assert judges["judge_b"] == OTHER and judges["judge_a"] != OTHER and judges["n_items"] == 1045
        assert judges["criteria"] and sum(c["n"] for c in judges["criteria"]) == judges["n_grades"]
        assert all(0.0 <= c["agreement"] <= 1.0 for c in judges["criteria"]) and -1.0 <= judges["kappa"] <= 1.0
        page = client.get(f"/compare?a={orig}&b={rec.run_id}")
        assert page.status_code == 200 and 'id="judges-agreement"' in page.text
        assert judges["criteria"][0]["criterion"] in page.text
        other_model = regraded[MODELS[1]][0]  # two answering models: no answers in common, no judges block
        assert client.get(f"/v1/compare?a={orig}&b={other_model}").json()["judges"] is None
        exact = client.get(f"/v1/results/{rec.run_id}").json()
        assert exact["metrics"][1]["name"] == "judge_agreement" and exact["metrics"][1]["value"] == 1.0
