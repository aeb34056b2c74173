"""The statistics of issue 14 on the warehouse the real pipeline publishes (``medbench materialize
--demo``): each vitaldb-ioh@0 result against MAP alone, computed at publish time into its own table
(not in result.json, not in the run id); the one-class replicates on the result page; the contamination
basis; and leaderboard ties that agree with /v1/compare."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from litestar.testing import TestClient

from api.app import create_app
from pipelines.engine.evaluate import contamination_verdict
from pipelines.engine.identity import run_id
from support.plugins import specs as load_specs
from support.ioh_data import check_versus_baseline
from support.ties import ties_against_compare
from medbench.layout import DataDir
from warehouse.read import current_version, read_version

SPECS = load_specs()
TASK = SPECS.task("vitaldb-ioh@0")


@pytest.fixture(scope="module")
def client(demo_data: Path) -> Iterator[TestClient]:
    with TestClient(create_app(demo_data)) as c:
        yield c


def ioh_rows(client: TestClient) -> list[dict]:
    rows = client.get("/v1/leaderboard?task=vitaldb-ioh@0").json()["rows"]
    assert len(rows) >= 3 and TASK.ioh.baseline_model in {r["model"]["slug"] for r in rows}
    return rows


def test_every_ioh_result_against_map_alone(client: TestClient, demo_data: Path) -> None:
    data = DataDir(demo_data)
    table = {b.run_id: b for b in read_version(data, current_version(data)).baseline_comparisons}
    rows = ioh_rows(client)
    base = next(r["run_id"] for r in rows if r["model"]["slug"] == TASK.ioh.baseline_model)
    for row in rows:
        run = row["run_id"]
        stored = msgspec.json.decode(data.result_path(run).read_bytes())
        assert not any("baseline" in key or "versus" in key for key in stored), "a comparison in result.json"
        model = SPECS.models[row["model"]["slug"]]  # the run id knows nothing of the baseline
        assert run_id(model, TASK, stored["versions"]["dataset_snapshot"]) == run
        if run == base:
            assert client.get(f"/v1/results/{run}").json()["versus_baseline"] is None and run not in table
            assert 'id="versus-baseline"' not in client.get(f"/r/{run}").text
            continue
        v = check_versus_baseline(client, demo_data, run, base)
        b = table[run]  # the warehouse's own table holds what the API serves
        assert (b.baseline_run_id, b.difference, b.ci_low, b.ci_high, b.p_value) == (
            v["baseline_run_id"], v["difference"], v["ci_low"], v["ci_high"], v["p_value"])
        assert (b.replicates, b.seed) == (TASK.bootstrap.replicates, TASK.bootstrap.seed)


def test_result_pages_count_the_one_class_replicates(client: TestClient) -> None:
    for row in ioh_rows(client):
        extras = client.get(f"/v1/results/{row['run_id']}").json()["extras"]
        dropped, drawn = extras["bootstrap_dropped_replicates"], extras["bootstrap_replicates"]
        assert drawn == TASK.bootstrap.replicates
        page = client.get(f"/r/{row['run_id']}").text
        assert f'<p id="dropped-replicates" class="{"notice" if dropped > 0.01 * drawn else "muted"}">' in page
        assert f"{dropped} of {drawn} bootstrap replicates" in page


def test_contamination_status_and_basis_are_the_model_spec_s(client: TestClient) -> None:
    for item in client.get("/v1/results?limit=1000").json()["results"]:
        body = client.get(f"/v1/results/{item['run_id']}").json()
        model, dataset = SPECS.models[body["model"]["slug"]], SPECS.datasets[body["dataset"]]
        assert (body["contamination_status"], body["contamination_basis"]) == contamination_verdict(model, dataset)


def test_ties_with_the_leader_agree_with_compare(client: TestClient) -> None:
    boards = [(t, m) for t in ("clinicalqa@0", "vitaldb-ioh@0") for m in (None, "llm", "rule", "ml")]
    pairs = ties_against_compare(client, boards)
    assert pairs and [tied for tied, _ in pairs] == [holds for _, holds in pairs]
