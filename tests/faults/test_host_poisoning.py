"""A request naming two hosts is refused, so it cannot leave its links in the answer cache for others.

Self-links (``url``, ``predictions_url``, the BibTeX ``url``) are built from the Host a request came
to when ``MEDBENCH_PUBLIC_URL`` is unset (the default, and what the demo and this server use). A
request with two ``Host`` headers used to be keyed in the answer cache under the last one while its
links were built from the first: ``Host: evil.example`` then ``Host: 127.0.0.1:PORT`` made every
later plain request get ``http://evil.example/...`` links until the next publish. The same ambiguity
exists when an absolute-form request target (``GET http://a.example/... HTTP/1.1``) names another
host than ``Host`` (a proxy in front would key on the one, the app link from the other). Both are
refused with ``400 bad_request`` on every route, before the answer cache or Litestar answers.

Against ``medbench serve`` in its own process (its HTTP protocol included), over raw sockets: no HTTP
client sends two Host headers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from bench._servers import Running
from support.api_data import RUN_IDS, publish_fixture
from support.live_server import live_api, raw_request

RUN = RUN_IDS["medgemma-cqa0"]
LOOKUP = "/v1/lookup?model=medgemma-27b&task=clinicalqa@0"
EVIL = "evil.example"
# every kind of route: answer-cached ones, other /v1 routes, artifacts, the website, health, an unknown path
ROUTES = [LOOKUP, "/v1/leaderboard?task=clinicalqa@0", f"/v1/results/{RUN}", "/v1/tasks", "/v1/stats",
          f"/artifacts/{RUN}/predictions.parquet", "/", "/healthz", "/no/such/path"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    top = tmp_path_factory.mktemp("host-poisoning")
    publish_fixture(top / "data")
    with live_api(top / "data", top / "server.log") as running:
        yield running


def request(target: str, *headers: str) -> bytes:
    return (f"GET {target} HTTP/1.1\r\n" + "".join(f"{h}\r\n" for h in headers) + "Connection: close\r\n\r\n").encode()


def assert_bad_request(status: int, headers: dict[str, str], body: bytes) -> None:
    assert status == 400, body[:300]
    assert headers["content-type"] == "application/json"
    error = json.loads(body)
    assert set(error) == {"error", "message"} and error["error"] == "bad_request", error
    assert "Host" in error["message"] and "\n" not in error["message"]


def assert_own_links(server: Running, path: str) -> None:
    """A plain request afterwards gets links to the server it asked, never to the attacker's host."""
    answer = httpx.get(server.base + path, timeout=10)
    assert answer.status_code == 200
    assert EVIL.encode() not in answer.content
    if path == LOOKUP:
        result = answer.json()["result"]
        assert result["url"] == f"{server.base}/r/{RUN}"
        assert result["predictions_url"].startswith(f"{server.base}/artifacts/{RUN}/")


@pytest.mark.parametrize("order", ["evil-first", "evil-last"])
def test_two_host_headers_are_refused_and_leave_nothing_in_the_cache(server: Running, order: str) -> None:
    mine = f"Host: 127.0.0.1:{server.port}"
    hosts = [f"Host: {EVIL}", mine] if order == "evil-first" else [mine, f"Host: {EVIL}"]
    assert_bad_request(*raw_request(server.port, request(LOOKUP, *hosts)))
    assert_own_links(server, LOOKUP)


@pytest.mark.parametrize("path", ROUTES)
def test_two_host_headers_are_refused_on_every_route(server: Running, path: str) -> None:
    mine = f"Host: 127.0.0.1:{server.port}"
    assert_bad_request(*raw_request(server.port, request(path, f"Host: {EVIL}", mine)))
    assert_bad_request(*raw_request(server.port, request(path, mine, mine)))  # even twice the same: send one


@pytest.mark.parametrize("path", ROUTES)
def test_an_absolute_target_naming_another_host_is_refused(server: Running, path: str) -> None:
    mine = f"127.0.0.1:{server.port}"
    assert_bad_request(*raw_request(server.port, request(f"http://{EVIL}{path}", f"Host: {mine}")))
    assert_bad_request(*raw_request(server.port, request(f"http://{mine}{path}", f"Host: {EVIL}")))
    assert_bad_request(*raw_request(server.port, request(f"http://{EVIL}{path}")))  # no Host at all
    if path != "/no/such/path":
        assert_own_links(server, path)


def test_an_absolute_target_that_agrees_with_host_is_answered(server: Running) -> None:
    mine = f"127.0.0.1:{server.port}"
    status, _, body = raw_request(server.port, request(f"http://{mine}{LOOKUP}", f"Host: {mine}"))
    assert status == 200, body[:300]
    assert json.loads(body)["result"]["url"] == f"http://{mine}/r/{RUN}"


def test_a_refusal_to_a_browser_carries_the_cors_headers(server: Running) -> None:
    mine = f"Host: 127.0.0.1:{server.port}"
    status, headers, body = raw_request(server.port, request(LOOKUP, f"Host: {EVIL}", mine, "Origin: https://x.example"))
    assert_bad_request(status, headers, body)
    assert headers["access-control-allow-origin"] == "*"
    assert headers["x-medbench-warehouse"] and headers["etag"] and headers["cache-control"] == "no-cache"


def test_the_server_log_has_no_traceback(server: Running) -> None:
    raw_request(server.port, request(LOOKUP, f"Host: {EVIL}", f"Host: 127.0.0.1:{server.port}"))
    assert "Traceback" not in server.log()
