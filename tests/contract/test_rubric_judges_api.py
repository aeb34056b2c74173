"""Rubric tasks' judges on the API and the site, on a small published warehouse (issue 44): a model's
answers graded by the task's judge and by another judge, and a second model; ``/v1/compare`` of the
two judges gives their agreement per criterion, the leaderboard notes a row whose judge failed its
scorecard (``judge_kappa`` below ``min_judge_kappa``), and the compare and task pages show both."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from litestar.testing import TestClient
from support.api_data import DATASETS, MODEL_REFS, MODELS, UTC

from api.app import create_app
from medbench.kinds.rubric import Rubric
from warehouse.keys import KEY_ENV, load_key, sign_catalog
from medbench.layout import DataDir
from warehouse.publish import Catalog, publish
from medbench.records import JudgeRef, MetricValue, ResultRecord, UsageRecord, Versions

TASK = "clinicalqa-open@0"
OWN, OTHER = "judges/own", "judges/other"
N = 12


def _task() -> dict:
    spec = {"slug": "clinicalqa-open", "version": 0, "dataset": "clinicalqa", "kind": "rubric",
            "primary_metric": "rubric_score", "preview": True, "bootstrap": {"replicates": 100, "seed": 1},
            "rubric": {"judge": OWN, "min_judge_kappa": 0.6}}
    return {"slug": "clinicalqa-open", "version": 0, "dataset": "clinicalqa", "kind": "rubric", "title": "open",
            "primary_metric": "rubric_score", "preview": True, "spec_hash": hashlib.sha256(repr(spec).encode()).hexdigest(),
            "spec": spec, "description": "A rubric task.", "cluster_column": None}


def _predictions(path: Path, answers: list[str], gold: list[bool], reasoning: list[bool]) -> None:
    """One judge sample per criterion; ``gold``/``reasoning``: the judge's verdict per item."""
    rows = {"instance_id": [], "score": [], "answer": [], "rubric_sha256": [], "criterion_id": [], "judge_sample": [],
            "met": [], "justification": [], "points": []}
    for i, (a, g, r) in enumerate(zip(answers, gold, reasoning)):
        rows["instance_id"].append(f"q{i:03d}")
        rows["score"].append(min(1.0, (5.0 * g + 1.0 * r) / 6.0))
        rows["answer"].append(a)
        rows["rubric_sha256"].append("h" * 64)
        rows["criterion_id"].append(["gold", "reasoning"])
        rows["judge_sample"].append([0, 0])
        rows["met"].append([g, r])
        rows["justification"].append(["", ""])
        rows["points"].append([5.0, 1.0])
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(rows, schema=Rubric.schema), path)


def _record(data: DataDir, run_id: str, model: str, judge: str, kappa: float, answers, gold, reasoning) -> ResultRecord:
    path = data.predictions_path(run_id)
    _predictions(path, answers, gold, reasoning)
    score = pq.read_table(path).column("score").to_pylist()
    value = sum(score) / len(score)
    return ResultRecord(
        run_id=run_id, task=TASK, dataset="clinicalqa", model=MODEL_REFS[model], tier="baseline", demo=False,
        metrics=[MetricValue("rubric_score", value, value - 0.1, value + 0.1),
                 MetricValue("judge_agreement", 1.0, 0.9, 1.0),
                 MetricValue("judge_kappa", kappa, kappa - 0.1, kappa + 0.1)],
        n=N, parse_rate=None, cost_usd=0.0, eval_date=dt.date(2026, 11, 1), created_at=dt.datetime(2026, 11, 1, tzinfo=UTC),
        contamination=None, config={"bootstrap": {"replicates": 100, "seed": 1}},
        versions=Versions(task_spec_hash="t" * 64, model_spec_hash="m" * 64, dataset_snapshot="snap", parser=None,
                          code_revision="abc1234", libraries={}),
        usage=UsageRecord(prompt_tokens=None, completion_tokens=None, wall_seconds=1.0, hardware="cpu"),
        price_table_date=dt.date(2026, 10, 1), predictions_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        extras={}, judge=JudgeRef(model=judge, revision="1", prompt_sha256="p" * 64, samples=1))


A_OWN, A_OTHER, B_OWN = "a0a0a0a0a0a0", "a1a1a1a1a1a1", "b0b0b0b0b0b0"
ANSWERS = [f"answer {i}" for i in range(N)]
GOLD_OWN = [i % 2 == 0 for i in range(N)]
GOLD_OTHER = [i % 2 == 0 or i == 1 for i in range(N)]  # one disagreement on gold
REASONING = [i % 3 == 0 for i in range(N)]  # the two judges agree on every reasoning verdict


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> DataDir:
    data = DataDir(tmp_path_factory.mktemp("rubric"))
    records = [
        _record(data, A_OWN, "kgpu/medgemma-27b", OWN, 0.41, ANSWERS, GOLD_OWN, REASONING),  # fails the scorecard
        _record(data, A_OTHER, "kgpu/medgemma-27b", OTHER, 0.9, ANSWERS, GOLD_OTHER, REASONING),
        _record(data, B_OWN, "openai/gpt-oss-20b", OWN, 0.8, [f"other {i}" for i in range(N)], GOLD_OWN, REASONING),
    ]
    cat = Catalog(datasets=DATASETS[:1], tasks=[_task()], models=MODELS, results=records, demo=False)
    sign = sign_catalog(data, cat, load_key(Path(os.environ[KEY_ENV])), today=dt.date(2026, 11, 2))
    publish(data, cat, now=dt.datetime(2026, 11, 2, tzinfo=UTC), sign=sign)
    return data


@pytest.fixture(scope="module")
def client(data: DataDir) -> Iterator[TestClient]:
    with TestClient(create_app(data.root)) as c:
        yield c


def test_the_printed_board_keeps_the_tasks_own_judge(data: DataDir) -> None:
    from pipelines.cli.leaderboards import render_leaderboards

    text = render_leaderboards(data)  # what `medbench demo` prints
    assert A_OWN in text and B_OWN in text and A_OTHER not in text and f"judged by {OWN}" in text


def test_compare_of_two_judges_gives_their_agreement_per_criterion(client: TestClient) -> None:
    body = client.get(f"/v1/compare?a={A_OWN}&b={A_OTHER}").json()
    j = body["judges"]
    assert (j["judge_a"], j["judge_b"], j["n_items"], j["n_grades"]) == (OWN, OTHER, N, 2 * N)
    by = {c["criterion"]: c for c in j["criteria"]}
    assert by["gold"]["n"] == N and by["gold"]["agreement"] == pytest.approx(11 / 12)
    assert by["reasoning"]["agreement"] == 1.0 and by["reasoning"]["kappa"] == 1.0
    assert j["agreement"] == pytest.approx(23 / 24) and 0 < j["kappa"] < 1
    assert client.get(f"/v1/compare?a={A_OWN}&b={B_OWN}").json()["judges"] is None  # one judge, other answers
    page = client.get(f"/compare?a={A_OWN}&b={A_OTHER}")
    assert page.status_code == 200 and 'id="judges-agreement"' in page.text and "0.917" in page.text


def test_the_leaderboard_notes_a_judge_below_its_scorecard_threshold(client: TestClient) -> None:
    board = client.get(f"/v1/leaderboard?task={TASK}").json()
    assert {r["run_id"] for r in board["rows"]} == {A_OWN, B_OWN}  # the task's own judge only
    (w,) = board["judge_warnings"]
    assert (w["run_id"], w["model"], w["judge"], w["kappa"], w["min_kappa"]) == (A_OWN, "kgpu/medgemma-27b", OWN, 0.41, 0.6)
    assert OWN in w["message"] and "0.410" in w["message"] and "min_judge_kappa 0.6" in w["message"]
    other = client.get(f"/v1/leaderboard?task={TASK}&judge={OTHER}").json()
    assert [r["run_id"] for r in other["rows"]] == [A_OTHER] and "judge_warnings" not in other
    page = client.get("/tasks/clinicalqa-open?version=0").text
    assert 'id="judge-warnings"' in page and "0.410" in page
