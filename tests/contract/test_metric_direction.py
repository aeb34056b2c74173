"""A primary metric where lower is better (an error, a regression kind's MAE) ranks ascending
everywhere a board is ordered: ``/v1/leaderboard`` (rank 1 = lowest), the home page's "Leader",
the CSV download, the plain-text leaderboards (``medbench leaderboard`` and the demo's printout),
the documented DuckDB order, and ``/v1/compare``'s ``better`` (docs/api.md, docs/duckdb.md)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from pathlib import Path

import duckdb
import msgspec
import pytest
from litestar.testing import TestClient
from support.api_data import RUN_IDS, catalog, distinct_choice_predictions

from api.app import create_app
from api.routes.compare import better
from pipelines.cli.leaderboards import render_leaderboards
from pipelines.engine.ranking import rank_rows
from medbench.layout import DataDir
from warehouse.publish import publish
from warehouse.read import PRIMARY_ORDER_SQL, read_ranks

NOW = dt.datetime(2026, 10, 29, 12, tzinfo=dt.UTC)
TASK = "clinicalqa@0"
# the current results of clinicalqa@0 with the fixture's values, once their accuracy reads "lower is better"
LOWEST_FIRST = ["random-cqa0", "gptoss-cqa0", "medgemma-cqa0"]  # 0.2, then 0.71 twice (eval date 10-15 < 10-20)


def _published(tmp_path: Path) -> DataDir:
    data = DataDir(tmp_path / "data")
    cat = catalog(data)
    distinct_choice_predictions(data, cat.results)
    flipped = []
    for r in cat.results:
        if r.task == TASK:
            primary = msgspec.structs.replace(r.metrics[0], direction="lower")
            r = msgspec.structs.replace(r, metrics=[primary, *r.metrics[1:]])
        flipped.append(r)
    cat.results = flipped
    cat.ranks = rank_rows(data, cat.results, cat.tasks, read_ranks(data))
    publish(data, cat, now=NOW)
    return data


@pytest.fixture
def data(tmp_path: Path) -> DataDir:
    return _published(tmp_path)


def test_leaderboard_ranks_a_lower_is_better_primary_ascending(data: DataDir) -> None:
    ids = {v: k for k, v in RUN_IDS.items()}
    with TestClient(create_app(data.root), base_url="http://testserver.local") as client:
        board = client.get(f"/v1/leaderboard?task={TASK}").json()
        assert [ids[r["run_id"]] for r in board["rows"]] == LOWEST_FIRST
        assert [r["rank"] for r in board["rows"]] == [1, 2, 3]
        assert board["rows"][0]["metric"]["direction"] == "lower"
        assert board["rows"][0]["tied_with_leader"] is True
        assert [r["rank_low"] <= r["rank"] <= r["rank_high"] for r in board["rows"]] == [True] * 3
        # the CSV download keeps the board's order and ranks
        rows = list(csv.DictReader(io.StringIO(client.get("/tasks/clinicalqa/leaderboard.csv?version=0").text)))
        assert [ids[r["run_id"]] for r in rows] == LOWEST_FIRST and rows[0]["rank"] == "1"
        # the home page's "Leader" of the task is its lowest
        home = client.get("/").text
        row = next(tr for tr in re.findall(r"<tr>.*?</tr>", home, re.S) if ">clinicalqa" in tr and "@0" in tr)
        assert f'/r/{RUN_IDS["random-cqa0"]}' in row, row
        # the task page lists the lowest first
        page = client.get("/tasks/clinicalqa?version=0").text
        found = [ids[m] for m in re.findall(r'href="/r/([0-9a-f]{12})"', page) if m in ids]
        assert found[:3] == LOWEST_FIRST


def test_plain_text_and_duckdb_order_follow_the_direction(data: DataDir) -> None:
    lines = [line.split()[0] for line in render_leaderboards(data).splitlines() if line.startswith("  ")]
    first_task = lines[1:4]  # after the header line of clinicalqa@0
    assert first_task == ["medbench/random", "openai/gpt-oss-20b", "kgpu/medgemma-27b"], lines
    path = data.duckdb_link
    con = duckdb.connect(str(path), read_only=True)
    try:
        got = [r[0] for r in con.execute(
            f"SELECT run_id FROM results WHERE task = ? AND superseded_by IS NULL ORDER BY {PRIMARY_ORDER_SQL}, "
            "eval_date, run_id", [TASK]).fetchall()]
        ranked = [r[0] for r in con.execute(
            "SELECT run_id FROM leaderboard_ranks WHERE task = ? AND model_type = '' AND metric = 'accuracy' "
            "ORDER BY rank", [TASK]).fetchall()]
    finally:
        con.close()
    assert got == ranked == [RUN_IDS[k] for k in LOWEST_FIRST]


def test_compare_names_the_better_result_in_the_metrics_direction(data: DataDir) -> None:
    a, b = RUN_IDS["gptoss-cqa0"], RUN_IDS["random-cqa0"]
    with TestClient(create_app(data.root), base_url="http://testserver.local") as client:
        body = client.get(f"/v1/compare?a={a}&b={b}").json()
        assert body["direction"] == "lower"
        if body["ci_low"] > 0:  # a's accuracy is higher, which this board calls worse
            assert body["better"] == "b"
        elif body["ci_high"] < 0:
            assert body["better"] == "a"
        else:
            assert body["better"] is None
        page = client.get(f"/compare?a={a}&b={b}").text
        assert "lower is better" in page or "No clear difference" in page


@pytest.mark.parametrize(("direction", "low", "high", "expected"), [
    ("higher", 0.1, 0.3, "a"), ("higher", -0.3, -0.1, "b"), ("lower", 0.1, 0.3, "b"), ("lower", -0.3, -0.1, "a"),
    ("lower", -0.1, 0.1, None), ("target", 0.1, 0.3, None),
])
def test_better_reads_the_interval_in_the_direction(direction: str, low: float, high: float,
                                                    expected: str | None) -> None:
    assert better(direction, low, high) == expected
