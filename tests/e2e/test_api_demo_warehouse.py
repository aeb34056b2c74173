"""The API over a warehouse made by the real pipeline (``medbench materialize --demo``), not by the
API's own fixtures: every route answers in docs/api.md's shapes on what the pipeline publishes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from litestar.testing import TestClient

from api.app import create_app
from medbench.kinds import kind
from support.api_data import ADDITIONS, DATASET, RESULT, ROW, STATS, SUMMARY, TASK, assert_shape

pytestmark = pytest.mark.slow

CHOICE_COLUMNS = ["instance_id", "prediction", "label", "correct", "parse_status", "raw_output"]
SCORE_COLUMNS = ["instance_id", "score", "label", "caseid", "subjectid", "t"]
RUBRIC_COLUMNS = ["instance_id", "score", "answer", "rubric_sha256", "criterion_id", "judge_sample", "met",
                  "justification", "points"]
# the demo's predictions files, exactly, by kind (score: vitaldb-ioh's own columns after the kind's)
COLUMNS = {"choice": CHOICE_COLUMNS, "score": SCORE_COLUMNS, "rubric": RUBRIC_COLUMNS}


@pytest.fixture(scope="module")
def client(demo_data: Path) -> Iterator[TestClient]:
    with TestClient(create_app(demo_data)) as c:
        yield c


def test_every_route_on_the_demo_warehouse(client: TestClient, tmp_path: Path) -> None:
    stats = client.get("/v1/stats").json()
    assert_shape(stats, STATS, extra=ADDITIONS["stats"])
    assert stats["demo"] is True and stats["results"] > 0
    for dataset in client.get("/v1/datasets").json()["datasets"]:
        assert_shape(dataset, DATASET, extra=ADDITIONS["dataset"])
    tasks = client.get("/v1/tasks").json()["tasks"]
    assert {t["slug"] for t in tasks} >= {"clinicalqa", "vitaldb-ioh"}
    for task in tasks:
        assert_shape(task, TASK, extra=ADDITIONS["task"])
        strategy = kind(task["kind"])  # every kind the demo publishes, never only choice and score
        assert task["kind"] in COLUMNS, f"the demo publishes a {task['kind']} task: add its predictions' columns"
        assert client.get(f"/v1/tasks/{task['slug']}?version={task['version']}").json()["spec_hash"] == task["spec_hash"]
        board = client.get(f"/v1/leaderboard?task={task['slug']}@{task['version']}").json()
        assert board["rows"], task["slug"]  # every demo task has results, so each kind's checks below run
        values = [row["metric"]["value"] for row in board["rows"]]
        assert values == sorted(values, reverse=True)
        for row in board["rows"]:
            assert_shape(row, ROW)
            assert row["demo"] is True
            assert (row["parse_rate"] is None) == (not strategy.parses_replies)  # only parsed replies have a rate
            result = client.get(f"/v1/results/{row['run_id']}").json()
            assert_shape(result, RESULT, extra=ADDITIONS["result"])
            judged = getattr(strategy, "board_judge", None) is not None  # rubric: a judge model grades the answers
            assert (result["judge"] is not None) == judged
            assert (result["usage"]["judging"] is not None) == judged
            primary = next(m for m in result["metrics"] if m["name"] == task["primary_metric"])
            assert (primary["ci_low_items_only"] is not None) == judged  # the items-only interval beside it
            if judged:  # the board is the demo judge's, graded judge_samples times
                assert result["judge"]["model"] == "medbench-sim-open/judge" and result["judge"]["samples"] == 3
            model = result["model"]
            lookup = client.get(f"/v1/lookup?model={model['slug']}&task={row['task']}").json()
            assert lookup["status"] == "evaluated" and lookup["result"]["run_id"] == row["run_id"]
            download = client.get(f"/artifacts/{row['run_id']}/predictions.parquet")
            assert download.status_code == 200
            path = tmp_path / f"{row['run_id']}.parquet"
            path.write_bytes(download.content)
            columns = pq.read_schema(path).names
            assert columns[:len(strategy.schema.names)] == strategy.schema.names, columns  # the kind's, first
            assert columns == COLUMNS[task["kind"]], columns
    listing = client.get("/v1/results?limit=1000").json()
    assert listing["total"] == stats["results"]
    for item in listing["results"]:
        assert_shape(item, SUMMARY, extra=ADDITIONS["summary"])
