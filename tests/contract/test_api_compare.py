"""``GET /v1/compare``: the contract's shape, the numbers of ``api.compare`` on the published files,
its errors, its headers, and its place in the OpenAPI document."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.compare import compare_files
from support.api_data import ERROR, RUN_IDS, assert_shape
from support.site_data import BETTER, WORSE
from medbench.layout import DataDir

COMPARE = {"a": "str", "b": "str", "task": "str", "metric": "str", "n_shared": "int", "difference": "float",
           "ci_low": "float", "ci_high": "float", "p_value": "float", "method": "str",
           "p_at_floor": "bool"}  # docs/api.md: paired comparisons gain p_at_floor
ADDITIONS = {"value_a", "value_b", "replicates", "seed", "dropped_replicates", "a_only_correct", "b_only_correct",
             "direction", "better", "judges"}  # judges: two rubric judges compared (null otherwise)


@pytest.fixture(scope="module")
def client(site_data: Path) -> Iterator[TestClient]:
    with TestClient(create_app(site_data)) as c:
        yield c


def _get(client: TestClient, a: str, b: str) -> dict:
    response = client.get(f"/v1/compare?a={a}&b={b}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert_shape(body, COMPARE, extra=ADDITIONS)
    return body


def test_clearly_better_result_on_the_published_files(client: TestClient, site_data: Path) -> None:
    a, b = RUN_IDS[BETTER], RUN_IDS[WORSE]
    body = _get(client, a, b)
    data = DataDir(site_data)
    expected = compare_files("choice", data.predictions_path(a), data.predictions_path(b), 100, 1)  # the task's spec
    assert (body["a"], body["b"], body["task"], body["metric"]) == (a, b, "clinicalqa@0", "accuracy")
    assert body["n_shared"] == expected.n_shared == 40
    assert body["difference"] == pytest.approx(expected.difference) and body["difference"] > 0
    assert (body["ci_low"], body["ci_high"], body["p_value"]) == pytest.approx(
        (expected.ci_low, expected.ci_high, expected.p_value))
    assert body["ci_low"] > 0 and body["p_value"] < 0.001
    assert (body["direction"], body["better"]) == ("higher", "a")  # accuracy: higher is better
    assert (body["replicates"], body["seed"]) == (100, 1)
    assert body["b_only_correct"] == 0 and body["a_only_correct"] > 0
    assert "McNemar" in body["method"]
    assert body["p_at_floor"] is False  # an exact test has no bootstrap floor, however small p is


def test_order_flips_the_sign(client: TestClient) -> None:
    ab, ba = _get(client, RUN_IDS[BETTER], RUN_IDS[WORSE]), _get(client, RUN_IDS[WORSE], RUN_IDS[BETTER])
    assert ba["difference"] == pytest.approx(-ab["difference"])
    assert ba["ci_high"] < 0 and ba["p_value"] == ab["p_value"]


def test_results_with_identical_predictions_differ_by_zero(client: TestClient) -> None:
    body = _get(client, RUN_IDS["medgemma-cqa0"], RUN_IDS["medgemma-cqa0-old"])
    assert body["difference"] == 0.0 and body["ci_low"] <= 0 <= body["ci_high"] and body["p_value"] == 1.0
    same = _get(client, RUN_IDS["medgemma-cqa0"], RUN_IDS["medgemma-cqa0"])
    assert same["difference"] == 0.0 and same["p_value"] == 1.0


def test_auroc_task_uses_the_subject_bootstrap(client: TestClient) -> None:
    body = _get(client, RUN_IDS["neglastmap-ioh0"], RUN_IDS["logreg-ioh0"])
    assert (body["task"], body["metric"]) == ("vitaldb-ioh@0", "auroc")
    assert body["n_shared"] == 24 and body["difference"] == 0.0 and body["p_value"] == 1.0
    assert "subjects" in body["method"] and body["a_only_correct"] is None


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert_shape(body, ERROR)
    assert body["error"] == code
    return body


def test_results_of_different_task_versions_are_invalid(client: TestClient) -> None:
    body = _error(client.get(f"/v1/compare?a={RUN_IDS['medgemma-cqa0']}&b={RUN_IDS['medgemma-cqa1']}"), 400,
                  "invalid_parameter")
    assert "clinicalqa@0" in body["message"] and "clinicalqa@1" in body["message"]
    _error(client.get(f"/v1/compare?a={RUN_IDS['medgemma-cqa0']}&b={RUN_IDS['logreg-ioh0']}"), 400, "invalid_parameter")


@pytest.mark.parametrize("query", ["", f"?a={RUN_IDS['medgemma-cqa0']}", f"?b={RUN_IDS['medgemma-cqa0']}",
                                   f"?a=&b={RUN_IDS['medgemma-cqa0']}"])
def test_missing_parameters_are_invalid(client: TestClient, query: str) -> None:
    _error(client.get(f"/v1/compare{query}"), 400, "invalid_parameter")


def test_unknown_runs_are_not_found(client: TestClient) -> None:
    _error(client.get(f"/v1/compare?a={RUN_IDS['medgemma-cqa0']}&b=0123456789ab"), 404, "run_not_found")
    _error(client.get(f"/v1/compare?a=0123456789ab&b={RUN_IDS['medgemma-cqa0']}"), 404, "run_not_found")


@pytest.mark.parametrize("other", ["not-a-run", "../../etc", "%09", "0123456789AB"])
def test_malformed_run_ids_are_invalid_parameters_naming_the_parameter(client: TestClient, other: str) -> None:
    """The documented pattern is what the server checks: present but malformed is never "missing"."""
    body = _error(client.get(f"/v1/compare?a={RUN_IDS['medgemma-cqa0']}&b={other}"), 400, "invalid_parameter")
    assert "'b'" in body["message"] and "missing" not in body["message"]
    body = _error(client.get(f"/v1/compare?a={other}&b=000000000000"), 400, "invalid_parameter")
    assert "'a'" in body["message"] and "missing" not in body["message"]


def test_headers_head_and_revalidation(client: TestClient) -> None:
    path = f"/v1/compare?a={RUN_IDS[BETTER]}&b={RUN_IDS[WORSE]}"
    first = client.get(path)
    for name in ("etag", "cache-control", "x-medbench-warehouse"):
        assert name in first.headers
    assert client.get(path).content == first.content
    head = client.head(path)
    assert head.status_code == 200 and head.content == b"" and head.headers["etag"] == first.headers["etag"]
    assert client.get(path, headers={"if-none-match": first.headers["etag"]}).status_code == 304


def test_documented_in_openapi(client: TestClient) -> None:
    document = client.get("/v1/openapi.json").json()
    operation = document["paths"]["/v1/compare"]["get"]
    assert operation["operationId"] == "compare"
    params = {p["name"]: p for p in operation["parameters"]}
    assert params["a"]["required"] and params["b"]["required"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Compare"}
    assert {"400", "404"} <= set(operation["responses"])
    schema = document["components"]["schemas"]["Compare"]
    assert set(COMPARE) <= set(schema["required"])
