"""Every error code and status of docs/api.md, HEAD for every GET, and 405 with ``Allow``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api import render
from api.app import create_app
from support.api_data import ERROR, RUN_IDS, assert_shape

GET_ROUTES = [
    "/v1/datasets",
    "/v1/tasks",
    "/v1/tasks/clinicalqa",
    "/v1/leaderboard?task=clinicalqa@0",
    "/v1/results",
    f"/v1/results/{RUN_IDS['medgemma-cqa0']}",
    "/v1/lookup?model=medgemma-27b&task=clinicalqa@0",
    "/v1/stats",
    "/v1/openapi.json",
    f"/artifacts/{RUN_IDS['medgemma-cqa0']}/predictions.parquet",
    "/healthz",
]


@pytest.fixture(scope="module")
def client(shared_data: tuple[Path, str]) -> Iterator[TestClient]:
    with TestClient(create_app(shared_data[0])) as c:
        yield c


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert_shape(body, ERROR)
    assert body["error"] == code
    assert body["message"]
    for name in ("x-medbench-warehouse", "etag", "cache-control"):
        assert name in response.headers
    return body


@pytest.mark.parametrize(
    "path",
    ["/v1/leaderboard?task=nope", "/v1/leaderboard?task=clinicalqa@7", "/v1/lookup?model=medgemma-27b&task=nope@0",
     "/v1/tasks/nope", "/v1/tasks/clinicalqa?version=9", "/v1/tasks/clinicalqa@9", "/v1/tasks/clinicalqa@0?version=1"],
)
def test_task_not_found(client: TestClient, path: str) -> None:
    assert_error(client.get(path), 404, "task_not_found")


@pytest.mark.parametrize(
    "path",
    ["/v1/results/0123456789ab", "/v1/results/not-a-run-id", "/v1/results/ABCDEF012345", "/v1/results/0123456789ab0",
     "/artifacts/0123456789ab/predictions.parquet", "/artifacts/zzz/predictions.parquet",
     "/artifacts/0123456789AB/predictions.parquet", "/artifacts/%2E%2E/predictions.parquet"],
)
def test_run_not_found(client: TestClient, path: str) -> None:
    assert_error(client.get(path), 404, "run_not_found")


@pytest.mark.parametrize(
    "path", ["/v1/results/..%2F..%2Fetc", "/artifacts/..%2F..%2Fwarehouse/predictions.parquet",
             "/artifacts/..%2Fwarehouse%2FCURRENT%00/predictions.parquet"],
)
def test_path_tricks_never_reach_a_file(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.json()["error"] in ("not_found", "run_not_found")


def test_artifact_unavailable_when_predictions_file_is_missing(own_data: tuple[Path, str]) -> None:
    """The run is published, the server lost its file: 503, not 404 (issue #22)."""
    root, _ = own_data
    run = RUN_IDS["random-cqa0"]
    (root / "artifacts" / run / "predictions.parquet").unlink()
    with TestClient(create_app(root)) as c:
        body = assert_error(c.get(f"/artifacts/{run}/predictions.parquet"), 503, "artifact_unavailable")
        assert "missing" in body["message"]
        assert c.get(f"/v1/results/{run}").status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/v1/leaderboard", "/v1/leaderboard?task=", "/v1/leaderboard?task=clinicalqa&limit=0",
        "/v1/leaderboard?task=clinicalqa&limit=1001", "/v1/leaderboard?task=clinicalqa&limit=ten",
        "/v1/leaderboard?task=clinicalqa&model_type=human", "/v1/leaderboard?task=clinicalqa@x",
        "/v1/results?limit=0", "/v1/results?limit=1001", "/v1/results?offset=-1", "/v1/results?model_type=cnn",
        "/v1/results?task=clinicalqa@latest",
        "/v1/lookup?task=clinicalqa@0", "/v1/lookup?model=medgemma-27b", "/v1/lookup?model=&task=clinicalqa@0",
        "/v1/lookup?model=medgemma-27b&task=@0", "/v1/lookup?model=gpt-oss-20b&task=clinicalqa@0",
        "/v1/tasks/clinicalqa?version=x", "/v1/tasks/clinicalqa?version=-1",
    ],
)
def test_invalid_parameter(client: TestClient, path: str) -> None:
    body = assert_error(client.get(path), 400, "invalid_parameter")
    assert "Traceback" not in body["message"]


@pytest.mark.parametrize(
    "path",
    ["/v1", "/v1/", "/v1/nope", "/v1/leaderboards", "/v1/openapi.json/x", "/schema", "/schema/swagger",
     "/artifacts", "/artifacts/0123456789ab", "/artifacts/0123456789ab/predictions.csv", "/nope/deeper"],
)
def test_unknown_path_is_json_not_found(client: TestClient, path: str) -> None:
    for method in ("GET", "POST"):
        response = client.request(method, path)
        assert_error(response, 404, "not_found")
        assert "<html" not in response.text.lower()


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_method_not_allowed_with_allow_header(client: TestClient, method: str) -> None:
    for path in GET_ROUTES:
        response = client.request(method, path)
        assert_error(response, 405, "method_not_allowed")
        assert response.headers["allow"] == "GET, HEAD"


def test_head_for_every_get(client: TestClient) -> None:
    for path in GET_ROUTES:
        get = client.get(path)
        head = client.head(path)
        assert head.status_code == get.status_code == 200, path
        assert head.content == b""
        assert head.headers["content-length"] == str(len(get.content)), path
        for name in ("content-type", "etag", "cache-control", "x-medbench-warehouse"):
            assert head.headers[name] == get.headers[name], (path, name)


def test_head_of_an_error_has_no_body(client: TestClient) -> None:
    response = client.head("/v1/results/0123456789ab")
    assert response.status_code == 404 and response.content == b""
    assert response.headers["x-medbench-warehouse"]


def test_no_warehouse_is_503_with_a_hint(tmp_path: Path) -> None:
    with TestClient(create_app(tmp_path / "empty")) as c:
        for path in GET_ROUTES:
            response = c.get(path)
            if path == "/v1/openapi.json":
                assert response.status_code == 200
                continue
            body = assert_error(response, 503, "warehouse_unavailable")
            assert "medbench materialize --demo" in body["message"]
            assert response.headers["x-medbench-warehouse"] == "none"
        assert_error(c.get("/v1/nope"), 404, "not_found")


def test_crash_is_json_500_without_stack_trace(shared_data: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(render, "result", broken)
    with TestClient(create_app(shared_data[0]), raise_server_exceptions=False) as c:
        response = c.get(f"/v1/results/{RUN_IDS['gptoss-cqa0']}")
        body = assert_error(response, 500, "internal_error")
        assert "secret" not in response.text and "Traceback" not in response.text
        assert response.headers["x-medbench-warehouse"] == shared_data[1]
        assert body == {"error": "internal_error", "message": body["message"]}
