"""The clinicalqa demo board the real pipeline publishes (``medbench materialize --demo``) with the
simulated LLM panel (issue 26, item 2): at least eight rows, a tie group, parse rates and
per-category accuracies that differ, every simulated model labelled simulated and marked demo."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from pipelines.datasets.clinicalqa.simulated import PANEL
from pipelines.datasets.clinicalqa.simulated_styles import NEEDS
from support.plugins import specs as load_specs

pytestmark = pytest.mark.slow

TWINS = {"medbench-sim/reasoning-ko", "medbench-sim/markdown-ko"}


@pytest.fixture(scope="module")
def client(demo_data: Path) -> Iterator[TestClient]:
    with TestClient(create_app(demo_data)) as c:
        yield c


@pytest.fixture(scope="module")
def rows(client: TestClient) -> list[dict]:
    return client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"]


def test_the_clinicalqa_demo_board_has_at_least_eight_rows(rows: list[dict]) -> None:
    assert len(rows) >= 8
    simulated = [r for r in rows if r["model"]["slug"].startswith("medbench-sim/")]
    assert len(simulated) >= 8 and all(r["demo"] is True for r in rows)
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert len({(r["rank_low"], r["rank_high"]) for r in rows}) >= 4  # ranks a reader can tell apart


def test_the_exactly_tied_pair_is_one_tie_group(rows: list[dict]) -> None:
    """The twins lead: the same value and interval, both tied with the leader, and the same replicate
    ranks (ties share the better rank in every replicate), so the second's marginal interval is the
    first's widened to hold its own point rank (1-1 and 1-2); their simultaneous sets are one set
    (identical predictions are never told apart), so the hulls agree the same way."""
    twins = [r for r in rows if r["model"]["slug"] in TWINS]
    assert len(twins) == 2
    a, b = twins
    assert a["metric"] == b["metric"] and (a["rank"], b["rank"]) == (1, 2)
    assert a["marginal_rank_low"] == b["marginal_rank_low"] == 1
    assert b["marginal_rank_high"] == max(a["marginal_rank_high"], b["rank"])
    assert a["rank_low"] == b["rank_low"] == 1 and b["rank_high"] == max(a["rank_high"], b["rank"])
    assert a["tied_with_leader"] and b["tied_with_leader"]
    assert not all(r["tied_with_leader"] for r in rows)


def test_parse_rates_differ_and_the_hedger_parses_below_one(rows: list[dict]) -> None:
    rates = {r["model"]["slug"]: r["parse_rate"] for r in rows}
    assert len(set(rates.values())) >= 3
    assert rates["medbench-sim/hedging"] < 0.9 and rates["medbench-sim/terse"] == 1.0


def test_per_category_accuracies_differ_across_models(client: TestClient, rows: list[dict]) -> None:
    """Over the simulated models whose style the task's parser reads (``NEEDS``: under v2, JSON,
    English sentences and short Korean endings read as mostly wrong, which flattens their categories)."""
    version = int(load_specs().task("clinicalqa@0").choice.parser.lstrip("v"))
    style = {f"medbench-sim/{p.name}": p.style for p in PANEL}
    best = {}
    for row in rows:
        slug = row["model"]["slug"]
        if slug not in style or int(NEEDS[style[slug]].lstrip("v")) > version:
            continue
        by_category = client.get(f"/v1/results/{row['run_id']}").json()["extras"]["by_category"]
        assert len(by_category) >= 10
        accuracy = {c["category"]: c["accuracy"] for c in by_category}
        assert max(accuracy.values()) - min(accuracy.values()) > 0.2, slug
        best[slug] = max(accuracy, key=accuracy.get)
    assert len(set(best.values())) >= 3


def test_every_simulated_model_is_labelled_simulated(client: TestClient, rows: list[dict]) -> None:
    page = client.get("/tasks/clinicalqa").text
    simulated = [r for r in rows if r["model"]["slug"].startswith("medbench-sim/")]
    assert len(simulated) == len(PANEL) >= 8
    for row in simulated:
        model = client.get(f"/v1/results/{row['run_id']}").json()["model"]
        assert model["name"].startswith("Simulated LLM: ") and model["provider"] == "medbench-sim"
        assert model["name"] in page
        assert row["cost_usd"] == 0.0
