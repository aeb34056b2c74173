"""Request bodies and refusals on a live ``medbench serve``: a ``/mcp`` body over 1 MiB is ``413
payload_too_large`` without being held in memory (from its Content-Length before any of it is sent, or
as a chunked body streams past the limit), and the refusals that Litestar's CORS middleware and the MCP
SDK answer themselves are the contract's JSON ``{error, message}`` too."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from bench._servers import LOOPBACK, Running
from support.api_data import publish_fixture
from support.live_server import medbench_serve

LIMIT = 1024 * 1024
pytestmark = pytest.mark.slow

MCP_HEAD = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    top = tmp_path_factory.mktemp("faults-bodies")
    publish_fixture(top / "data")
    with medbench_serve(top / "data", top / "server.log") as running:
        yield running
        assert running.alive()
    assert "Traceback" not in running.log()


def read_answer(conn: socket.socket) -> tuple[int, dict[str, str], dict]:
    received = b""
    while b"\r\n\r\n" not in received or not received.rstrip().endswith(b"}"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, json.loads(body)


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert set(body) == {"error", "message"} and body["error"] == code, body


def test_a_declared_large_body_is_refused_before_it_is_sent(server: Running) -> None:
    with socket.create_connection((LOOPBACK, server.port), timeout=10) as conn:
        conn.sendall(MCP_HEAD + f"Content-Length: {3 * LIMIT}\r\n\r\n".encode())  # the head only
        status, headers, body = read_answer(conn)
    assert status == 413 and headers["content-type"] == "application/json", (status, headers)
    assert body["error"] == "payload_too_large" and str(LIMIT) in body["message"]


def test_a_chunked_body_is_refused_once_past_the_limit(server: Running) -> None:
    chunk = b"%x\r\n%s\r\n" % (64 * 1024, b" " * 64 * 1024)
    with socket.create_connection((LOOPBACK, server.port), timeout=10) as conn:
        conn.sendall(MCP_HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
        for _ in range(2 * LIMIT // (64 * 1024)):  # 2 MiB, never the last chunk
            try:
                conn.sendall(chunk)
            except OSError:
                break
        status, _, body = read_answer(conn)
    assert status == 413 and body["error"] == "payload_too_large", (status, body)


def test_large_bodies_are_not_held_in_memory(server: Running) -> None:
    before = server.rss_bytes()
    conns = []
    try:
        for _ in range(40):  # each declares 4 MiB and sends 3 MiB of it, slowly enough to be held
            conn = socket.create_connection((LOOPBACK, server.port), timeout=10)
            conns.append(conn)
            conn.sendall(MCP_HEAD + f"Content-Length: {4 * LIMIT}\r\n\r\n".encode())
            try:
                for _ in range(3):
                    conn.sendall(b" " * LIMIT)
            except OSError:
                pass  # refused and closed: what is wanted
        grown = server.rss_bytes() - before
        assert grown < 48 * 1024 * 1024, f"server grew by {grown / 2**20:.0f} MiB"
    finally:
        for conn in conns:
            conn.close()
    assert httpx.get(f"{server.base}/v1/stats", timeout=10).status_code == 200


def test_a_small_mcp_body_is_still_served(server: Running) -> None:
    response = httpx.post(f"{server.base}/mcp", timeout=10,
                          headers={"accept": "application/json, text/event-stream"},
                          json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x" * 500_000}})
    assert response.status_code == 200 and response.json()["result"]["tools"], response.text[:300]


def test_refused_cors_preflights_are_json(server: Running) -> None:
    asks = {"Origin": "https://example.org", "Access-Control-Request-Method": "DELETE"}
    response = httpx.options(f"{server.base}/v1/stats", headers=asks)
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "GET, HEAD"
    asks = {"Origin": "https://example.org", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "X-Anything"}
    assert_error(httpx.options(f"{server.base}/v1/stats", headers=asks), 400, "bad_request")
    asks["Access-Control-Request-Headers"] = "If-None-Match"  # what is allowed is still allowed
    assert httpx.options(f"{server.base}/v1/stats", headers=asks).status_code == 204


def test_the_mcp_sdks_refusals_are_json(server: Running) -> None:
    mcp = f"{server.base}/mcp"
    accept = {"accept": "application/json, text/event-stream"}
    response = httpx.delete(mcp, headers=accept)  # no sessions to end: stateless
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"
    assert_error(httpx.post(mcp, headers={**accept, "content-type": "application/json"}, content=b"{"),
                 400, "bad_request")  # not JSON
    assert_error(httpx.post(mcp, headers=accept, json={"not": "json-rpc"}), 400, "bad_request")
    assert_error(httpx.post(mcp, headers={"accept": "text/html"}, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
                 406, "not_acceptable")
