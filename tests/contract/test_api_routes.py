"""Every route's 200 body against docs/api.md, field by field, and the lookup/leaderboard semantics."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.bibtex import escape
from support.api_data import (
    ADDITIONS,
    DATASET,
    DATASETS,
    DETECTABLE,
    ERROR,
    RESULT,
    ROW,
    RUN_IDS,
    RUNS,
    STATS,
    SUMMARY,
    TASK,
    assert_shape,
)

BASE = "http://testserver.local"


@pytest.fixture(scope="module")
def client(shared_data: tuple[Path, str]) -> Iterator[TestClient]:
    root, _ = shared_data
    with TestClient(create_app(root), base_url=BASE) as c:
        yield c


def ok(client: TestClient, path: str) -> dict:
    response = client.get(path)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def test_datasets(client: TestClient) -> None:
    body = ok(client, "/v1/datasets")
    assert list(body) == ["datasets"]
    assert [d["slug"] for d in body["datasets"]] == ["clinicalqa", "vitaldb"]
    for item in body["datasets"]:
        assert_shape(item, DATASET, extra=ADDITIONS["dataset"])
    first = body["datasets"][0]
    assert first["public_since"] == "2025-04-04"
    assert first["doi"] == DATASETS[0]["doi"]
    assert first["source"] == DATASETS[0]["source"]


def test_tasks_one_item_per_version(client: TestClient) -> None:
    body = ok(client, "/v1/tasks")
    assert list(body) == ["tasks"]
    for item in body["tasks"]:
        assert_shape(item, TASK, extra=ADDITIONS["task"])
    counts = {(t["slug"], t["version"]): t["n_results"] for t in body["tasks"]}
    # superseded runs are still published results of their task
    assert counts == {("clinicalqa", 0): 4, ("clinicalqa", 1): 1, ("vitaldb-ioh", 0): 2}
    kinds = {t["slug"]: t["kind"] for t in body["tasks"]}
    assert kinds == {"clinicalqa": "choice", "vitaldb-ioh": "score"}


def test_task_detail_latest_and_by_version(client: TestClient) -> None:
    latest = ok(client, "/v1/tasks/clinicalqa")
    assert_shape(latest, {**TASK, "spec": "dict", "participant_flow": "dict?", "detectable_difference": DETECTABLE},
                 extra=ADDITIONS["task_detail"])
    assert latest["version"] == 1
    assert latest["spec"]["version"] == 1 and latest["spec"]["bootstrap"] == {"replicates": 100, "seed": 1}
    assert ok(client, "/v1/tasks/clinicalqa?version=0")["version"] == 0
    assert ok(client, "/v1/tasks/clinicalqa@0")["version"] == 0
    listed = {(t["slug"], t["version"]): t for t in ok(client, "/v1/tasks")["tasks"]}
    detail = ok(client, "/v1/tasks/vitaldb-ioh")
    assert {k: detail[k] for k in listed[("vitaldb-ioh", 0)]} == listed[("vitaldb-ioh", 0)]


def test_leaderboard_rows_order_and_ranks(client: TestClient) -> None:
    body = ok(client, "/v1/leaderboard?task=clinicalqa@0")
    assert list(body) == ["task", "metric", "rows", "rank_method"]  # rank_method: an addition
    assert body["task"] == "clinicalqa@0" and body["metric"] == "accuracy"
    for row in body["rows"]:
        assert_shape(row, ROW)
    # the superseded medgemma run is not on the board; the 0.71 tie is broken by eval_date
    assert [r["run_id"] for r in body["rows"]] == [RUN_IDS["gptoss-cqa0"], RUN_IDS["medgemma-cqa0"], RUN_IDS["random-cqa0"]]
    assert [r["rank"] for r in body["rows"]] == [1, 2, 3]
    top = body["rows"][0]
    assert top["model"] == {"slug": "openai/gpt-oss-20b", "name": "gpt-oss 20B (OpenAI)", "type": "llm", "provider": "openai"}
    assert top["metric"] == {"name": "accuracy", "value": 0.71, "ci_low": pytest.approx(0.68), "ci_high": pytest.approx(0.74),
                            "method": "bootstrap-percentile", "direction": "higher", "target": None,
                            "replicates_kept": 100, "ci_low_items_only": None, "ci_high_items_only": None}
    assert top["tier"] == "baseline" and top["demo"] is False
    assert top["url"] == f"{BASE}/r/{top['run_id']}"
    assert [r["contamination"] for r in body["rows"]] == [False, True, None]


def test_leaderboard_latest_version_filter_and_limit(client: TestClient) -> None:
    assert ok(client, "/v1/leaderboard?task=clinicalqa")["task"] == "clinicalqa@1"
    rules = ok(client, "/v1/leaderboard?task=clinicalqa@0&model_type=rule")["rows"]
    assert [(r["rank"], r["model"]["slug"]) for r in rules] == [(1, "medbench/random")]
    assert ok(client, "/v1/leaderboard?task=clinicalqa@0&model_type=ml")["rows"] == []
    limited = ok(client, "/v1/leaderboard?task=clinicalqa@0&limit=2")["rows"]
    assert [r["rank"] for r in limited] == [1, 2]


def test_leaderboard_score_task(client: TestClient) -> None:
    body = ok(client, "/v1/leaderboard?task=vitaldb-ioh@0")
    assert body["metric"] == "auroc"
    assert [r["model"]["slug"] for r in body["rows"]] == ["medbench/neg-last-map", "medbench/logreg"]
    for row in body["rows"]:
        assert_shape(row, ROW)
        assert row["parse_rate"] is None
        assert row["n"] == 24  # test windows


def test_results_listing_and_filters(client: TestClient) -> None:
    body = ok(client, "/v1/results")
    assert list(body) == ["results", "total", "limit", "offset"]
    assert (body["total"], body["limit"], body["offset"]) == (len(RUNS), 100, 0)
    for item in body["results"]:
        assert_shape(item, SUMMARY, extra=ADDITIONS["summary"])
    assert {r["run_id"] for r in body["results"]} == set(RUN_IDS.values())
    old = next(r for r in body["results"] if r["run_id"] == RUN_IDS["medgemma-cqa0-old"])
    assert old["superseded_by"] == RUN_IDS["medgemma-cqa0"]

    def ids(query: str) -> set[str]:
        return {r["run_id"] for r in ok(client, "/v1/results?" + query)["results"]}

    assert ids("dataset=vitaldb") == {RUN_IDS["neglastmap-ioh0"], RUN_IDS["logreg-ioh0"]}
    assert ids("task=clinicalqa") == {RUN_IDS["medgemma-cqa1"]}  # slug alone = latest version
    assert ids("task=clinicalqa@0&model=medgemma-27b") == {RUN_IDS["medgemma-cqa0"], RUN_IDS["medgemma-cqa0-old"]}
    assert ids("model=kgpu/medgemma-27b&task=clinicalqa@1") == {RUN_IDS["medgemma-cqa1"]}
    assert ids("model_type=ml") == {RUN_IDS["logreg-ioh0"]}
    assert ids("dataset=clinicalqa&model_type=rule") == {RUN_IDS["random-cqa0"]}
    assert ids("dataset=vitaldb&model_type=llm") == set()
    assert ids("model=nobody") == set()
    assert ids("task=no-such-task") == set()
    assert ids("model=gpt-oss-20b") == {RUN_IDS["gptoss-cqa0"]}  # a filter may name several models


def test_results_pagination(client: TestClient) -> None:
    everything = [r["run_id"] for r in ok(client, "/v1/results")["results"]]
    pages = []
    for offset in range(0, len(everything), 3):
        page = ok(client, f"/v1/results?limit=3&offset={offset}")
        assert (page["total"], page["limit"], page["offset"]) == (len(everything), 3, offset)
        pages += [r["run_id"] for r in page["results"]]
    assert pages == everything
    beyond = ok(client, "/v1/results?offset=50")
    assert beyond["results"] == [] and beyond["total"] == len(everything)
    assert len(ok(client, "/v1/results?limit=1000")["results"]) == len(everything)


def test_result_full_object(client: TestClient) -> None:
    run = RUN_IDS["medgemma-cqa0"]
    body = ok(client, f"/v1/results/{run}")
    assert_shape(body, RESULT, extra=ADDITIONS["result"])
    assert body["model"]["provider_model_id"] == "medgemma-27b"
    assert body["model"]["release_date"] == "2025-05-20"
    assert [m["name"] for m in body["metrics"]] == ["accuracy", "parse_rate"]
    assert body["metrics"][0] == body["metric"]
    assert body["predictions_url"] == f"{BASE}/artifacts/{run}/predictions.parquet"
    assert body["superseded_by"] is None and body["versions"]["parser"] == "v2"
    assert body["usage"] == {"prompt_tokens": 12000, "completion_tokens": 3000, "wall_seconds": 42.5, "hardware": "1x H200",
                             "answering": None, "judging": None}  # rubric tasks only
    assert body["config"]["bootstrap"] == {"replicates": 100, "seed": 1}
    assert body["extras"]["accuracy_by_category"]["내과"] == 0.71
    assert body["price_table_date"] == "2026-10-01" and body["dataset"] == "clinicalqa"
    bib = body["bibtex"]
    assert bib.startswith(f"@misc{{medbench-{run},")
    for needle in ("MedGemma 27B", "clinicalqa@0", run, "year = {2026}", f"\\url{{{BASE}/r/{run}}}", "doi:10.23421/2026.0800"):
        assert needle in bib
    assert bib.count("{") == bib.count("}")


def test_result_superseded_and_score(client: TestClient) -> None:
    old = ok(client, f"/v1/results/{RUN_IDS['medgemma-cqa0-old']}")
    assert old["superseded_by"] == RUN_IDS["medgemma-cqa0"]
    score = ok(client, f"/v1/results/{RUN_IDS['neglastmap-ioh0']}")
    assert_shape(score, RESULT, extra=ADDITIONS["result"])
    assert score["parse_rate"] is None and score["versions"]["parser"] is None
    assert score["usage"]["prompt_tokens"] is None and score["model"]["release_date"] is None
    assert [m["name"] for m in score["metrics"]] == ["auroc", "auprc", "prevalence"]
    assert score["extras"]["roc"]["tpr"] == [0.0, 0.9, 1.0]


@pytest.mark.parametrize(
    "model, task, expected",
    [
        ("kgpu/medgemma-27b", "clinicalqa@0", "medgemma-cqa0"),  # slug, explicit version; the newer of two runs
        ("medgemma-27b", "clinicalqa@0", "medgemma-cqa0"),  # provider model id
        ("medgemma-27b", "clinicalqa", "medgemma-cqa1"),  # slug without version = latest
        ("kgpu/medgemma-27b", "clinicalqa", "medgemma-cqa1"),
        ("neg-last-map", "vitaldb-ioh@0", "neglastmap-ioh0"),
        ("openai/gpt-oss-20b", "clinicalqa@0", "gptoss-cqa0"),  # the slug of a model whose id is shared
    ],
)
def test_lookup_evaluated(client: TestClient, model: str, task: str, expected: str) -> None:
    body = ok(client, f"/v1/lookup?model={model}&task={task}")
    assert list(body) == ["status", "result"]
    assert body["status"] == "evaluated"
    assert_shape(body["result"], RESULT, extra=ADDITIONS["result"])
    assert body["result"]["run_id"] == RUN_IDS[expected]
    assert body["result"] == ok(client, f"/v1/results/{RUN_IDS[expected]}")


@pytest.mark.parametrize(
    "model, task",
    [
        ("nobody/unknown", "clinicalqa@0"),  # unknown model
        ("random", "clinicalqa@1"),  # known model, never run on this version
        ("hf/gpt-oss-20b", "clinicalqa@0"),  # known model without any result
        ("logreg", "clinicalqa"),
    ],
)
def test_lookup_not_evaluated(client: TestClient, model: str, task: str) -> None:
    assert ok(client, f"/v1/lookup?model={model}&task={task}") == {"status": "not_evaluated", "result": None}


def test_lookup_ambiguous_provider_id_lists_slugs(client: TestClient) -> None:
    response = client.get("/v1/lookup?model=gpt-oss-20b&task=clinicalqa@0")
    assert response.status_code == 400
    body = response.json()
    assert_shape(body, ERROR)
    assert body["error"] == "invalid_parameter"
    assert "hf/gpt-oss-20b" in body["message"] and "openai/gpt-oss-20b" in body["message"]


def test_stats(client: TestClient, shared_data: tuple[Path, str]) -> None:
    body = ok(client, "/v1/stats")
    assert_shape(body, STATS, extra=ADDITIONS["stats"])
    assert (body["datasets"], body["tasks"], body["models"], body["results"]) == (2, 3, 6, len(RUNS))
    llm_runs = sum(1 for spec in RUNS.values() if spec[0] in ("kgpu/medgemma-27b", "openai/gpt-oss-20b"))
    assert body["total_cost_usd"] == pytest.approx(0.25 * llm_runs)
    assert body["warehouse_version"] == shared_data[1]
    assert body["demo"] is False


def test_healthz(client: TestClient, shared_data: tuple[Path, str]) -> None:
    assert ok(client, "/healthz") == {"status": "ok", "warehouse_version": shared_data[1]}


def test_predictions_download(client: TestClient, shared_data: tuple[Path, str], tmp_path: Path) -> None:
    import hashlib

    for label, expected_columns in [
        ("medgemma-cqa0", ["instance_id", "prediction", "label", "correct", "parse_status", "raw_output"]),
        ("neglastmap-ioh0", ["instance_id", "score", "label", "caseid", "subjectid", "t"]),
    ]:
        run = RUN_IDS[label]
        response = client.get(f"/artifacts/{run}/predictions.parquet")
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/vnd.apache.parquet"
        target = tmp_path / f"{run}.parquet"
        target.write_bytes(response.content)
        table = pq.read_table(target)
        assert table.column_names == expected_columns
        assert str(table.schema.field("instance_id").type) == "string"
        result = ok(client, f"/v1/results/{run}")
        assert hashlib.sha256(response.content).hexdigest() == result["predictions_sha256"]
        assert response.headers["etag"] == f'"{result["predictions_sha256"]}"'


def test_bibtex_escapes_special_characters() -> None:
    assert escape("50% & $x_1 {a} #2 ~ ^ \\") == r"50\% \& \$x\_1 \{a\} \#2 \textasciitilde{} \textasciicircum{} \textbackslash{}"
