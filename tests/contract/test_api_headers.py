"""The headers of docs/api.md: X-Medbench-Warehouse, ETag (+ 304), Cache-Control, CORS; and self-links."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from support.api_data import RUN_IDS

RUN = RUN_IDS["medgemma-cqa0"]
DATA_ROUTES = [
    "/v1/datasets", "/v1/tasks", "/v1/tasks/clinicalqa", "/v1/leaderboard?task=clinicalqa@0", "/v1/results",
    f"/v1/results/{RUN}", "/v1/lookup?model=medgemma-27b&task=clinicalqa@0", "/v1/openapi.json",
    f"/artifacts/{RUN}/predictions.parquet",
]
LIVE_ROUTES = ["/v1/stats", "/healthz"]
ERROR_ROUTES = ["/v1/nope", "/v1/results/0123456789ab", "/v1/leaderboard", "/v1/lookup?model=x&task=nope"]


@pytest.fixture(scope="module")
def client(shared_data: tuple[Path, str]) -> Iterator[TestClient]:
    with TestClient(create_app(shared_data[0])) as c:
        yield c


def test_warehouse_version_on_every_response(client: TestClient, shared_data: tuple[Path, str]) -> None:
    for path in DATA_ROUTES + LIVE_ROUTES + ERROR_ROUTES:
        assert client.get(path).headers["x-medbench-warehouse"] == shared_data[1], path
    assert client.post("/v1/stats").headers["x-medbench-warehouse"] == shared_data[1]


def test_etag_is_strong_stable_and_content_specific(client: TestClient) -> None:
    tags = {}
    for path in DATA_ROUTES + ERROR_ROUTES:
        first, second = client.get(path), client.get(path)
        tag = first.headers["etag"]
        assert tag.startswith('"') and tag.endswith('"') and not tag.startswith("W/"), path
        assert second.headers["etag"] == tag, path
        tags[path] = tag
    assert len(set(tags.values())) == len(tags)


@pytest.mark.parametrize("path", DATA_ROUTES + ["/healthz"])
def test_if_none_match_gives_304(client: TestClient, path: str) -> None:
    first = client.get(path)
    tag = first.headers["etag"]
    for header in (tag, f"W/{tag}", f'"other", {tag}', "*"):
        again = client.get(path, headers={"If-None-Match": header})
        assert again.status_code == 304, (path, header)
        assert again.content == b""
        assert again.headers["etag"] == tag
        assert again.headers["x-medbench-warehouse"] == first.headers["x-medbench-warehouse"]
        assert again.headers["cache-control"] == first.headers["cache-control"]
    assert client.get(path, headers={"If-None-Match": '"stale"'}).status_code == 200
    assert client.head(path, headers={"If-None-Match": tag}).status_code == 304


def test_errors_are_never_304(client: TestClient) -> None:
    for path in ERROR_ROUTES:
        tag = client.get(path).headers["etag"]
        assert client.get(path, headers={"If-None-Match": tag}).status_code >= 400


def test_cache_control(client: TestClient) -> None:
    for path in DATA_ROUTES:
        value = client.get(path).headers["cache-control"]
        assert value.startswith("public, max-age=") and 0 < int(value.split("=")[1]) <= 300, path
    for path in LIVE_ROUTES + ERROR_ROUTES:
        assert client.get(path).headers["cache-control"] == "no-cache", path


def test_cors_allows_get_from_any_origin(client: TestClient) -> None:
    origin = {"Origin": "https://agent.example"}
    for path in DATA_ROUTES + LIVE_ROUTES + ERROR_ROUTES:
        response = client.get(path, headers=origin)
        assert response.headers["access-control-allow-origin"] == "*", path
    exposed = client.get("/v1/stats", headers=origin).headers["access-control-expose-headers"].lower()
    assert "etag" in exposed and "x-medbench-warehouse" in exposed
    preflight = client.options(
        "/v1/lookup", headers={**origin, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "if-none-match"}
    )
    assert preflight.status_code in (200, 204)
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "GET" in preflight.headers["access-control-allow-methods"]
    assert "POST" not in preflight.headers["access-control-allow-methods"]


def _links(client: TestClient) -> list[str]:
    result = client.get(f"/v1/results/{RUN}").json()
    lookup = client.get("/v1/lookup?model=medgemma-27b&task=clinicalqa@0").json()["result"]
    row = client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"][1]
    summary = next(r for r in client.get("/v1/results").json()["results"] if r["run_id"] == RUN)
    assert row["run_id"] == RUN
    return [result["url"], result["predictions_url"], lookup["url"], lookup["predictions_url"], row["url"], summary["url"],
            result["bibtex"]]


def test_links_use_the_request_origin(shared_data: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEDBENCH_PUBLIC_URL", raising=False)
    app = create_app(shared_data[0])
    for origin in ("http://127.0.0.1:8123", "https://mirror.example"):
        with TestClient(app, base_url=origin) as c:
            links = _links(c)
        assert links[0] == f"{origin}/r/{RUN}"
        assert links[1] == f"{origin}/artifacts/{RUN}/predictions.parquet"
        assert all(link.startswith(origin) for link in links[2:6])
        assert f"\\url{{{origin}/r/{RUN}}}" in links[6]


@pytest.mark.parametrize("via_env", [True, False])
def test_links_use_the_public_url_setting(shared_data: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, via_env: bool) -> None:
    if via_env:
        monkeypatch.setenv("MEDBENCH_PUBLIC_URL", "https://medbench.kr/")
        app = create_app(shared_data[0])
    else:
        monkeypatch.delenv("MEDBENCH_PUBLIC_URL", raising=False)
        app = create_app(shared_data[0], public_url="https://medbench.kr")
    with TestClient(app, base_url="http://127.0.0.1:9999") as c:
        links = _links(c)
    assert links[0] == f"https://medbench.kr/r/{RUN}"
    assert links[1] == f"https://medbench.kr/artifacts/{RUN}/predictions.parquet"
    assert all(link.startswith("https://medbench.kr/") for link in links[2:6])
    assert "127.0.0.1" not in links[6]


def test_a_malformed_host_header_does_not_leak_into_links(client: TestClient) -> None:
    # Litestar itself refuses some malformed hosts (400); the rest must not reach the links
    refused = client.get(f"/v1/results/{RUN}", headers={"Host": "evil.example/<script>"})
    assert refused.status_code == 400 and refused.headers["content-type"] == "application/json"
    body = client.get(f"/v1/results/{RUN}", headers={"Host": "evil.example'onload=x@y"}).json()
    assert "evil" not in body["url"] and "evil" not in body["bibtex"]
    assert body["url"].endswith(f"/r/{RUN}")
