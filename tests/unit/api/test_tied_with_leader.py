"""A leaderboard row's ``tied_with_leader``: its simultaneous 95% rank set contains 1
(docs/api.md, "Routes"), set against what /v1/compare says of that row against the leader."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from litestar.testing import TestClient
from support.api_data import RUN_IDS, write_choice_predictions
from support.ioh_data import NOW, OTHER, another_scorer, ioh_catalog
from support.ties import ties_against_compare

from api.app import create_app
from pipelines.engine.ranking import leaderboard_blocks, rank_rows
from medbench.layout import DataDir
from warehouse.publish import publish
from warehouse.read import read_ranks

BOARDS = [(task, model_type) for task in ("clinicalqa@0", "vitaldb-ioh@0") for model_type in (None, "llm", "rule", "ml")]


# discordant counts (b: only the row right, c: only the leader right) against the leader, on 100 items:
# exact McNemar p = 0.061 (tied, though a percentile bootstrap interval excludes 0), p = 0.036, p = 1
DISCORDANT = [(9, 20), (8, 20), (3, 3)]
ITEMS = 100
# vitaldb-ioh@0 scorers (separation of the classes, noise seed) besides MAP alone (1.0) and logreg (2.5)
SCORERS = {"near-a": (2.4, 3), "near-b": (2.1, 4), "far": (0.2, 5)}


def write_correct(data: DataDir, run: str, correct: np.ndarray) -> None:
    path = data.predictions_path(run)
    write_choice_predictions(path, ITEMS)
    t = pq.read_table(path)
    pq.write_table(t.set_column(t.schema.get_field_index("correct"), "correct", pa.array(correct)), path)


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Iterator[TestClient]:
    data = DataDir(tmp_path_factory.mktemp("ties") / "data")
    cat = ioh_catalog(data)
    like = next(r for r in cat.results if r.run_id == RUN_IDS[OTHER])
    results = cat.results + [another_scorer(data, like, name, *v) for name, v in SCORERS.items()]
    board = leaderboard_blocks(results)[("clinicalqa@0", "")]
    assert len(board) == 1 + len(DISCORDANT)
    leader = np.arange(ITEMS) < 70
    write_correct(data, board[0].run_id, leader)
    for r, (b, c) in zip(board[1:], DISCORDANT):
        row = leader.copy()
        row[:c] = False  # c items only the leader got right
        row[70:70 + b] = True  # b items only this row got right
        write_correct(data, r.run_id, row)
    cat = dataclasses.replace(cat, results=results, ranks=rank_rows(data, results, cat.tasks, read_ranks(data)))
    publish(data, cat, now=NOW)
    with TestClient(create_app(data.root)) as c:
        yield c


def test_tied_with_leader_is_the_simultaneous_set_containing_one(client: TestClient) -> None:
    """Since the rank sets became simultaneous (Mogstad et al.), ``tied_with_leader`` is "the row's
    simultaneous set contains 1": never fewer ties than /v1/compare's pairwise interval finds (the
    set accounts for every comparison at once), and a row the set places below 1 is one compare
    separates too."""
    pairs = ties_against_compare(client, BOARDS)
    assert all(tied for tied, holds in pairs if holds)  # a pairwise tie is a tie
    assert {tied for tied, _ in pairs} == {True, False}  # both kinds of row occur
    rows = client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"]
    # p = 0.061 and p = 1 are ties pairwise and here; p = 0.036 is separated pairwise only
    assert [r["tied_with_leader"] for r in rows] == [True, True, True, True]
    for row in rows:
        assert row["tied_with_leader"] == (row["rank_low"] == 1)  # the hull's low end is the set's here
