"""Rank intervals at publish: the table's blocks, reuse of unchanged blocks, and what the API and site serve."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from support.api_data import RUN_IDS, catalog, distinct_choice_predictions
from litestar.testing import TestClient

from api.app import create_app
from pipelines.engine.ranking import leaderboard_blocks, rank_rows
from medbench.stats.ranks import accuracy_rank_intervals
from medbench.layout import DataDir
from warehouse.publish import publish
from warehouse.read import read_ranks

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 10, 29, 12, tzinfo=UTC)


def _published(tmp_path: Path):
    data = DataDir(tmp_path / "data")
    cat = catalog(data)
    distinct_choice_predictions(data, cat.results)
    cat.ranks = rank_rows(data, cat.results, cat.tasks, read_ranks(data))
    publish(data, cat, now=NOW)
    return data, cat


def test_rank_table_blocks_and_intervals(tmp_path: Path) -> None:
    data, cat = _published(tmp_path)
    rows = read_ranks(data)
    blocks = leaderboard_blocks(cat.results)
    assert {(r.task, r.model_type) for r in rows} == set(blocks)
    assert ("clinicalqa@0", "") in blocks and ("clinicalqa@0", "llm") in blocks and ("clinicalqa@0", "rule") in blocks
    for r in rows:
        assert r.rank_low <= r.rank <= r.rank_high
    # the all-models block of clinicalqa@0 is the joint bootstrap of its current results, in leaderboard order
    block = blocks[("clinicalqa@0", "")]
    correct = np.stack([pq.read_table(data.predictions_path(r.run_id)).column("correct").to_numpy() for r in block])
    want = accuracy_rank_intervals(correct, 100, 1, np.arange(1, len(block) + 1))
    got = sorted((r for r in rows if (r.task, r.model_type, r.metric) == ("clinicalqa@0", "", "accuracy")),
                 key=lambda r: r.rank)
    assert [r.run_id for r in got] == [r.run_id for r in block]
    assert [r.rank_low for r in got] == want.rank_low.tolist() and [r.rank_high for r in got] == want.rank_high.tolist()
    assert [r.marginal_rank_low for r in got] == want.marginal_rank_low.tolist()
    assert [r.marginal_rank_high for r in got] == want.marginal_rank_high.tolist()
    for r in rows:  # the hull of the simultaneous set and the marginal interval
        assert r.rank_low <= r.marginal_rank_low <= r.rank <= r.marginal_rank_high <= r.rank_high
    assert [r.tied_with_leader for r in got] == want.tied_with_leader.tolist() and got[0].tied_with_leader


def test_unchanged_blocks_are_reused_and_changed_ones_recomputed(tmp_path: Path) -> None:
    data, cat = _published(tmp_path)
    before = read_ranks(data)
    for r in cat.results:  # without predictions nothing could be recomputed: every row must come from reuse
        data.predictions_path(r.run_id).unlink()
    again = rank_rows(data, cat.results, cat.tasks, before)
    assert sorted(again, key=repr) == sorted(before, key=repr)
    fewer = [r for r in cat.results if r.run_id != RUN_IDS["random-cqa0"]]
    changed = rank_rows(data, fewer, cat.tasks, before)
    assert not any(r.task == "clinicalqa@0" and r.model_type in ("", "rule") for r in changed)  # recompute needed
    assert any(r.task == "clinicalqa@0" and r.model_type == "llm" for r in changed)  # same llm block: reused


def test_api_and_site_serve_the_table(tmp_path: Path) -> None:
    data, _ = _published(tmp_path)
    stored = {(r.model_type, r.run_id): r for r in read_ranks(data) if (r.task, r.metric) == ("clinicalqa@0", "accuracy")}
    with TestClient(create_app(data.root), base_url="http://testserver.local") as client:
        for model_type in (None, "llm"):
            q = "" if model_type is None else f"&model_type={model_type}"
            rows = client.get(f"/v1/leaderboard?task=clinicalqa@0{q}").json()["rows"]
            for row in rows:
                s = stored[(model_type or "", row["run_id"])]
                assert (row["rank"], row["rank_low"], row["rank_high"], row["tied_with_leader"]) == (
                    s.rank, s.rank_low, s.rank_high, s.tied_with_leader)
                assert (row["marginal_rank_low"], row["marginal_rank_high"]) == (s.marginal_rank_low, s.marginal_rank_high)
            limited = client.get(f"/v1/leaderboard?task=clinicalqa@0{q}&limit=1").json()["rows"]
            assert limited == rows[:1]
        html = client.get("/tasks/clinicalqa?version=0").text
        rows = client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"]
    for row in rows:
        tag = re.search(rf'<tr data-run-id="{row["run_id"]}"([^>]*)>\s*<td[^>]*>(.*?)</td>', html, re.S)
        assert tag is not None
        assert ('tied-leader' in tag.group(1)) == row["tied_with_leader"]
        assert f'{row["rank"]} <span class="muted rank-interval"' in tag.group(2)
        assert f'({row["rank_low"]}–{row["rank_high"]})' in tag.group(2)
    assert "rank-legend" in html


def test_a_warehouse_without_the_table_still_serves(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    publish(data, catalog(data), now=NOW)  # no rank rows: every row gets [rank, rank]
    with TestClient(create_app(data.root), base_url="http://testserver.local") as client:
        rows = client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"]
    assert [(r["rank_low"], r["rank_high"], r["tied_with_leader"]) for r in rows] == [
        (r["rank"], r["rank"], r["rank"] == 1) for r in rows]
