"""``detectable_difference`` on ``/v1/tasks/{slug}`` and the task and compare pages (docs/statistics.md,
"Smallest detectable difference"): computed from the current results' predictions."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from litestar.testing import TestClient
from support.ioh_data import BASELINE, OTHER, publish_ioh
from support.api_data import RUN_IDS

from api.app import create_app
from medbench.kind import read_aligned
from medbench.stats.detectable import (bootstrap_detectable, mcnemar_detectable, median_discordant_rate,
                                        median_pair_sd)
from medbench.stats.ranks import auroc_replicate_values


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> Iterator[tuple[TestClient, object]]:
    data = publish_ioh(tmp_path_factory.mktemp("detectable") / "data")
    # the catalog's clinicalqa results agree on every item (no discordant pair, nothing to state):
    # the random model gets the opposite of every answer (a median discordant rate of 0.5 over the
    # 6 pairs of 4 results: at 40 items a smaller one detects no difference at all)
    path = data.predictions_path(RUN_IDS["random-cqa0"])
    table = pq.read_table(path)
    correct = np.asarray(table.column("correct").to_pylist(), dtype=bool)
    correct = ~correct
    pq.write_table(table.set_column(table.schema.get_field_index("correct"), "correct", pa.array(correct)), path)
    with TestClient(create_app(data.root)) as c:
        yield c, data


def test_the_task_states_the_smallest_detectable_auroc_difference(setup) -> None:
    client, data = setup
    body = client.get("/v1/tasks/vitaldb-ioh@0").json()
    dd = body["detectable_difference"]
    assert dd["metric"] == "auroc" and dd["power"] == 0.8 and dd["alpha"] == 0.05
    board = client.get("/v1/leaderboard?task=vitaldb-ioh@0").json()["rows"]
    paths = [data.predictions_path(r["run_id"]) for r in board]
    assert len(paths) >= 2 and all(p.exists() for p in paths)
    aligned, _ = read_aligned(paths, ["score", "label", "subjectid"])
    values = auroc_replicate_values(np.stack([a["score"] for a in aligned]), np.asarray(aligned[0]["label"]).astype(bool),
                                    aligned[0]["subjectid"], 1000, 20261029)
    expected = bootstrap_detectable(median_pair_sd(values[np.isfinite(values).all(axis=1)]))
    assert dd["value"] == pytest.approx(expected, rel=1e-12) and "median over the" in dd["basis"]
    page = client.get("/tasks/vitaldb-ioh?version=0").text
    assert 'id="detectable-difference"' in page and f"{dd['value']:.3f}" in page
    compare = client.get(f"/compare?a={RUN_IDS[OTHER]}&b={RUN_IDS[BASELINE]}").text
    assert 'id="detectable-difference"' in compare


def test_the_accuracy_figure_comes_from_the_discordant_pair_rate(setup) -> None:
    client, data = setup
    board = client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"]
    paths = [data.predictions_path(r["run_id"]) for r in board]
    dd = client.get("/v1/tasks/clinicalqa@0").json()["detectable_difference"]
    assert len(paths) >= 2 and all(p.exists() for p in paths)

    aligned, _ = read_aligned(paths, ["correct"])
    correct = np.stack([np.asarray(a["correct"], dtype=bool) for a in aligned])
    assert dd["metric"] == "accuracy"
    assert dd["value"] == pytest.approx(mcnemar_detectable(median_discordant_rate(correct), correct.shape[1]))
    assert "discordant-pair rate" in dd["basis"]
