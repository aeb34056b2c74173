"""Hostile input against a live server: always a JSON 4xx, never a file outside the artifacts, and the
server keeps serving.

Requests go over a raw socket where a well-behaved client would refuse to send them (raw bytes
outside ASCII, ``..`` segments, null bytes, unknown method tokens), through httpx elsewhere. The data
directory is booby-trapped: a secret file beside it, and symlinks inside ``artifacts/`` that lead
to the secret (under an unpublished run id, in place of a published run's predictions file, in place
of a published run's folder) or to themselves. Where the contract gives a hostile-looking value a
normal answer (an unknown model in lookup is ``not_evaluated``; an unknown dataset filter matches
nothing) the test says so and expects that answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from urllib.parse import quote

from typing import Any

import httpx
import pytest

from support.api_data import RUN_IDS, publish_fixture
from bench._servers import Running
from support.live_server import live_api, raw_request
from medbench.layout import DataDir

SECRET = b"MEDBENCH-HOSTILE-TEST-SECRET-7f3a"
GOOD_RUN = RUN_IDS["medgemma-cqa0"]
FILE_SWAPPED_RUN = RUN_IDS["logreg-ioh0"]  # predictions.parquet -> the secret
FOLDER_SWAPPED_RUN = RUN_IDS["neglastmap-ioh0"]  # artifacts/<run> -> a folder outside
LOOPED_RUN = RUN_IDS["random-cqa0"]  # predictions.parquet -> itself
UNPUBLISHED_RUN = "0123456789ab"  # artifacts/<run> -> a folder outside, but no such result
SQL = ["' OR '1'='1", "clinicalqa@0'; DROP TABLE results; --", "1 UNION SELECT key, value FROM meta --",
       "\"; ATTACH DATABASE '/tmp/x.db' AS x; --", "%' AND 1=1 AND '%'='"]


@pytest.fixture(scope="module")
def trapped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, DataDir]]:
    top = tmp_path_factory.mktemp("hostile")
    data = DataDir(top / "data")
    publish_fixture(data.root)
    outside = top / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    (outside / "predictions.parquet").write_bytes(SECRET)
    (data.root / "secret.txt").write_bytes(SECRET)
    (data.warehouse / "secret.txt").write_bytes(SECRET)

    os.symlink(outside, data.artifacts / UNPUBLISHED_RUN)
    data.predictions_path(FILE_SWAPPED_RUN).unlink()
    os.symlink(outside / "secret.txt", data.predictions_path(FILE_SWAPPED_RUN))
    folder = data.artifacts / FOLDER_SWAPPED_RUN
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    os.symlink(outside, folder)
    data.predictions_path(LOOPED_RUN).unlink()
    os.symlink(data.predictions_path(LOOPED_RUN), data.predictions_path(LOOPED_RUN))

    warehouse_files = {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in data.warehouse.glob("*.duckdb")}
    with live_api(data.root, top / "server.log") as server:
        yield server, data
        assert server.alive()
        log = server.log()
    assert "Traceback" not in log, log
    assert "unhandled error" not in log, log  # api.errors logs every 500 so
    # read-only by construction: nothing a request said changed the published files
    assert {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in data.warehouse.glob("*.duckdb")} == warehouse_files


@pytest.fixture(scope="module")
def http(trapped: tuple[Running, DataDir]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=trapped[0].base, timeout=30.0) as client:
        yield client


@pytest.fixture
def server(trapped: tuple[Running, DataDir], http: httpx.Client) -> Iterator[Running]:
    yield trapped[0]
    still_serving(trapped[0], http)


def still_serving(server: Running, http: httpx.Client) -> None:
    assert server.alive()
    assert http.get("/healthz").json()["status"] == "ok"
    found = http.get("/v1/lookup", params={"model": "medgemma-27b", "task": "clinicalqa@0"})
    assert found.status_code == 200 and found.json()["result"]["run_id"] == GOOD_RUN


def request_bytes(target: bytes, method: bytes = b"GET", headers: bytes = b"Host: 127.0.0.1\r\n") -> bytes:
    return method + b" " + target + b" HTTP/1.1\r\n" + headers + b"Connection: close\r\n\r\n"


def assert_json_4xx(status: int, headers: dict[str, str], body: bytes, expected: int | None = None,
                    code: str | None = None) -> dict:
    assert 400 <= status < 500, (status, body[:300])
    if expected is not None:
        assert status == expected, (status, body[:300])
    assert headers["content-type"].startswith("application/json"), headers
    assert SECRET not in body
    error = json.loads(body)
    assert set(error) == {"error", "message"} and error["message"], error
    if code is not None:
        assert error["error"] == code, error
    return error


def check_raw(server: Running, target: bytes, expected: int | None = None, code: str | None = None, **kw) -> dict:
    status, headers, body = raw_request(server.port, request_bytes(target, **kw))
    return assert_json_4xx(status, headers, body, expected, code)


def check(response: httpx.Response, expected: int | None = None, code: str | None = None) -> dict:
    return assert_json_4xx(response.status_code, dict(response.headers), response.content, expected, code)


# ---- path traversal ---------------------------------------------------------------------------

TRAVERSALS = [
    b"/artifacts/../secret.txt", b"/artifacts/../../outside/secret.txt", b"/artifacts/../warehouse/CURRENT",
    b"/artifacts/%2e%2e/secret.txt", b"/artifacts/%2E%2E/%2E%2E/outside/secret.txt",
    b"/artifacts/%2e%2e%2fsecret.txt/predictions.parquet", b"/artifacts/..%2F..%2Foutside/predictions.parquet",
    b"/artifacts/%2e%2e%2f%2e%2e%2foutside%2fsecret.txt%00/predictions.parquet",
    b"/artifacts/" + GOOD_RUN.encode() + b"/../../secret.txt",
    b"/artifacts/" + GOOD_RUN.encode() + b"/predictions.parquet/../../../secret.txt",
    b"/artifacts/" + GOOD_RUN.encode() + b"%2f..%2f..%2fsecret.txt/predictions.parquet",
    b"/artifacts/" + GOOD_RUN.encode() + b"%00/predictions.parquet",
    b"/artifacts/" + GOOD_RUN.encode() + b"/predictions.parquet%00.txt",
    b"/artifacts/" + GOOD_RUN.encode() + b"/result.json",
    b"/artifacts/%2Fetc%2Fpasswd/predictions.parquet", b"/artifacts//etc/passwd/predictions.parquet",
    b"//etc/passwd", b"/etc/passwd", b"/%2e%2e/%2e%2e/etc/passwd", b"/v1/../secret.txt",
    b"/v1/results/..%2F..%2Fsecret.txt", b"/v1/results/%2e%2e", b"/v1/tasks/..%2F..%2Fsecret.txt",
    b"/artifacts/%5c..%5c..%5csecret.txt/predictions.parquet", b"/artifacts/..\\..\\secret.txt/predictions.parquet",
    b"http://127.0.0.1/../../secret.txt", b"/warehouse/CURRENT", b"/state/reuses.json", b"/medbench.duckdb",
    b"/artifacts/" + UNPUBLISHED_RUN.encode() + b"/secret.txt",
]


@pytest.mark.parametrize("target", TRAVERSALS, ids=lambda t: t.decode("latin-1")[:60])
def test_path_traversal_never_leaves_the_artifacts(server: Running, target: bytes) -> None:
    check_raw(server, target)


@pytest.mark.parametrize(
    "run", [UNPUBLISHED_RUN, FILE_SWAPPED_RUN, FOLDER_SWAPPED_RUN, LOOPED_RUN],
    ids=["unpublished-run-linked-outside", "published-file-linked-outside", "published-folder-linked-outside", "loop"],
)
def test_symlinks_in_the_data_directory_lead_nowhere(server: Running, http: httpx.Client, run: str) -> None:
    for method in ("GET", "HEAD"):
        response = http.request(method, f"/artifacts/{run}/predictions.parquet")
        assert SECRET not in response.content
        if run == LOOPED_RUN:  # a published result whose file cannot be opened: the server's fault, not the client's
            assert response.status_code == 503
            if method == "GET":
                assert response.json()["error"] == "artifact_unavailable"
            continue
        assert response.status_code == 404
        if method == "GET":
            check(response, 404, "run_not_found")


def test_a_published_file_inside_the_artifacts_is_still_served(
    server: Running, http: httpx.Client, trapped: tuple[Running, DataDir]
) -> None:
    response = http.get(f"/artifacts/{GOOD_RUN}/predictions.parquet")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/vnd.apache.parquet"
    expected = hashlib.sha256(trapped[1].predictions_path(GOOD_RUN).read_bytes()).hexdigest()
    assert hashlib.sha256(response.content).hexdigest() == expected == response.headers["etag"].strip('"')


# ---- long and repeated parameters -----------------------------------------------------------

def test_long_parameters_are_answered_in_json(server: Running, http: httpx.Client) -> None:
    long = "a" * 60_000  # still within what the HTTP parser accepts: reaches the app
    check(http.get("/v1/leaderboard", params={"task": long}), 404, "task_not_found")
    check(http.get("/v1/lookup", params={"model": "medgemma-27b", "task": long}), 404, "task_not_found")
    check(http.get(f"/v1/results/{long}"), 404, "run_not_found")
    check(http.get(f"/v1/tasks/{long}"), 404, "task_not_found")
    check(http.get("/v1/results", params={"limit": "9" * 5000}), 400, "invalid_parameter")
    check(http.get("/v1/leaderboard", params={"task": "clinicalqa@" + "9" * 5000}), 400, "invalid_parameter")
    # an unknown model is an answer, not an error (docs/api.md), however long its name
    unknown = http.get("/v1/lookup", params={"model": long, "task": "clinicalqa@0"})
    assert unknown.status_code == 200 and unknown.json() == {"status": "not_evaluated", "result": None}


def test_a_request_line_too_long_to_parse_is_refused_in_json(server: Running) -> None:
    check_raw(server, b"/v1/leaderboard?task=" + b"a" * 200_000, 400, "bad_request")
    check_raw(server, b"/v1/lookup?" + b"model=x&" * 30_000 + b"task=clinicalqa", 400, "bad_request")


@pytest.mark.parametrize(
    "query",
    ["task=clinicalqa@0&task=vitaldb-ioh@0", "task=clinicalqa@0&limit=1&limit=2", "task=clinicalqa@0&task=clinicalqa@0",
     "task=clinicalqa@0&" + "model_type=llm&" * 2000, "task=clinicalqa%400&%74ask=vitaldb-ioh"],
    ids=["two-values", "limit-twice", "same-value-twice", "2000-times", "encoded-name"],
)
def test_repeated_parameters_are_refused(server: Running, http: httpx.Client, query: str) -> None:
    error = check(http.get(f"/v1/leaderboard?{query}"), 400, "invalid_parameter")
    assert "more than once" in error["message"]


def test_repeated_parameters_are_refused_on_every_route_that_takes_them(server: Running, http: httpx.Client) -> None:
    for url in ["/v1/lookup?model=a&model=b&task=clinicalqa", "/v1/results?offset=1&offset=2",
                "/v1/tasks/clinicalqa?version=0&version=1"]:
        check(http.get(url), 400, "invalid_parameter")


# ---- SQL-looking and non-UTF-8 strings --------------------------------------------------------

@pytest.mark.parametrize("text", SQL)
def test_sql_looking_strings_are_just_unknown_names(server: Running, http: httpx.Client, text: str) -> None:
    check(http.get("/v1/leaderboard", params={"task": text}), None)
    check(http.get("/v1/lookup", params={"model": "medgemma-27b", "task": text}), None)
    check(http.get(f"/v1/results/{quote(text, safe='')}"), 404)  # run_not_found; not_found when it holds a /
    check(http.get(f"/v1/tasks/{quote(text, safe='')}"), None)
    check(http.get("/v1/results", params={"model_type": text}), 400, "invalid_parameter")
    check(http.get(f"/artifacts/{quote(text, safe='')}/predictions.parquet"), 404)
    # names are compared with published names, never executed: no match is the right answer
    unknown = http.get("/v1/lookup", params={"model": text, "task": "clinicalqa@0"})
    assert unknown.json() == {"status": "not_evaluated", "result": None}
    nothing = http.get("/v1/results", params={"dataset": text})
    assert nothing.status_code == 200 and nothing.json()["total"] == 0
    assert http.get("/v1/stats").json()["results"] == len(RUN_IDS)


@pytest.mark.parametrize(
    "target",
    [b"/v1/lookup?model=\xff\xfe&task=clinicalqa@0", b"/v1/leaderboard?task=clinicalqa\xc3\x28",
     b"/v1/results/\xed\xa0\x80", b"/v1/tasks/\xff", b"/artifacts/\x80\x81/predictions.parquet",
     b"/v1/lookup?model=\xe2\x82&task=\xf0\x9f\x98", b"/v1/results?dataset=\xc0\xaf"],
    ids=["ff-fe", "bad-continuation", "surrogate", "path-ff", "artifacts", "truncated", "overlong"],
)
def test_raw_bytes_outside_ascii_are_refused_in_json(server: Running, target: bytes) -> None:
    check_raw(server, target, 400, "bad_request")


@pytest.mark.parametrize(
    "url",
    ["/v1/lookup?model=%ff%fe&task=clinicalqa@0", "/v1/lookup?model=medgemma-27b&task=clinicalqa%c3%28",
     "/v1/leaderboard?task=%ed%a0%80", "/v1/results?model=%c0%af", "/v1/results?dataset=%80"],
)
def test_percent_encoded_bytes_that_are_not_utf8_are_refused(server: Running, http: httpx.Client, url: str) -> None:
    error = check(http.get(url), 400, "invalid_parameter")
    assert "UTF-8" in error["message"]


@pytest.mark.parametrize("url", ["/v1/results/%ff%fe", "/v1/tasks/%c3%28", "/artifacts/%80%81/predictions.parquet"])
def test_percent_encoded_non_utf8_in_paths_names_nothing(server: Running, http: httpx.Client, url: str) -> None:
    check(http.get(url), 404)


def test_null_bytes_name_nothing(server: Running, http: httpx.Client) -> None:
    check(http.get(f"/v1/results/{GOOD_RUN}%00"), 404, "run_not_found")
    check(http.get("/v1/leaderboard?task=clinicalqa%00"), 404, "task_not_found")
    check(http.get("/v1/tasks/clinicalqa%00"), 404, "task_not_found")


def test_hostile_host_headers(server: Running) -> None:
    check_raw(server, b"/v1/stats", 400, headers=b"Host: \xff\xfe\r\n")
    # a huge (but well-formed) Host header is not copied into links or cached bodies
    status, headers, body = raw_request(
        server.port, request_bytes(f"/v1/results/{GOOD_RUN}".encode(), headers=b"Host: " + b"a" * 5000 + b"\r\n")
    )
    assert status == 200
    assert json.loads(body)["url"] == f"{server.base}/r/{GOOD_RUN}"


# ---- methods ----------------------------------------------------------------------------------

ROUTES = ["/v1/lookup?model=medgemma-27b&task=clinicalqa@0", "/v1/leaderboard?task=clinicalqa", f"/v1/results/{GOOD_RUN}",
          "/v1/stats", f"/artifacts/{GOOD_RUN}/predictions.parquet", "/healthz", "/v1/openapi.json"]


@pytest.mark.parametrize("method", ["PATCH", "DELETE", "TRACE", "PROPFIND", "PUT", "POST", "OPTIONS", "MKCOL", "LOCK"])
def test_unknown_methods_are_refused_in_json(server: Running, http: httpx.Client, method: str) -> None:
    for route in ROUTES:
        response = http.request(method, route, content=b"x" if method in ("PUT", "POST", "PATCH") else None)
        check(response, 405, "method_not_allowed")
        assert response.headers["allow"] == "GET, HEAD"
    check(http.request(method, "/nothing/here"), 404, "not_found")


@pytest.mark.parametrize("method", [b"FOO", b"G\x00T", b"GET GET", b"\xc7\xc5\xd4"])
def test_malformed_method_tokens_are_refused_in_json(server: Running, method: bytes) -> None:
    check_raw(server, b"/v1/stats", 400, "bad_request", method=method)


# ---- /mcp: hostile bodies and headers get JSON-RPC or JSON errors, never a traceback ---------------

MCP_OK_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json",
                  "mcp-protocol-version": "2025-06-18"}
MCP_BODIES = [
    b"", b"{", b"{not json", b"null", b"[]", b"42", b'"text"', b"\xff\xfe\x00", b"[" * 10000 + b"]" * 10000,
    b'{"jsonrpc": "2.0"}', b'{"jsonrpc": "1.0", "id": 1, "method": "tools/list"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}',
    b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "lookup", "arguments": "x"}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "drop_table", "arguments": {}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "lookup", '
    b'"arguments": {"model": "' + b"x" * 100000 + b'", "task": "clinicalqa@0"}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "file:///etc/passwd"}}',
    b'[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]',
]


def _json_answer(response: httpx.Response) -> Any:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json"), response.headers
    assert SECRET not in response.content and b"Traceback" not in response.content
    return response.json() if response.content else None


@pytest.mark.parametrize("body", MCP_BODIES, ids=lambda b: b[:40].decode("latin-1"))
def test_hostile_mcp_bodies_get_json_errors(server: Running, http: httpx.Client, body: bytes) -> None:
    answer = _json_answer(http.post("/mcp", headers=MCP_OK_HEADERS, content=body))
    if isinstance(answer, dict) and "result" in answer and isinstance(answer["result"], dict):
        result = answer["result"]  # a tool call that failed is a tool error, never a success
        assert result.get("isError") is True or "tools" in result or "contents" not in result, answer


@pytest.mark.parametrize("headers", [
    {}, {"content-type": "text/plain"}, {"content-type": "application/json"},
    {"content-type": "application/json", "accept": "text/html"},
    {**MCP_OK_HEADERS, "host": "evil.example"}, {**MCP_OK_HEADERS, "origin": "http://evil.example"},
    {**MCP_OK_HEADERS, "mcp-protocol-version": "1999-01-01"}, {**MCP_OK_HEADERS, "mcp-session-id": "x" * 4000},
], ids=lambda h: ",".join(f"{k}={v[:20]}" for k, v in h.items()) or "none")
def test_hostile_mcp_headers_get_json_errors(server: Running, http: httpx.Client, headers: dict[str, str]) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    response = http.post("/mcp", headers=headers, content=body)
    _json_answer(response)


def test_an_mcp_body_over_the_limit_is_refused_in_json(server: Running, http: httpx.Client) -> None:
    response = http.post("/mcp", headers=MCP_OK_HEADERS, content=b" " * (5 << 20))
    assert response.status_code == 413 and _json_answer(response)["error"]


def test_mcp_is_the_only_path_taking_post_and_delete(server: Running, http: httpx.Client) -> None:
    for path in ("/v1/lookup", "/v1/models", "/agents", "/mcp/x"):
        for method in ("POST", "DELETE"):
            response = http.request(method, path)
            assert response.status_code in (404, 405) and response.json()["error"] in ("method_not_allowed", "not_found")
    assert http.get("/mcp").status_code == 405
