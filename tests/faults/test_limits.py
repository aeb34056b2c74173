"""One client cannot take the server down: oversized headers, slowloris, idle and half-open connections.

Each test talks raw HTTP over sockets to a ``medbench serve`` on loopback, because clients that
behave (httpx) cannot send what is tested. The limits are the deployed defaults (``api.http_protocol``:
64 KiB of header fields, 10 s to send a request head, 5 s keep-alive), except a small connection
cap (``--max-connections``) so that reaching it stays cheap.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from api.http_protocol import Limits
from api.server import KEEP_ALIVE_S
from support.api_data import publish_fixture
from bench._servers import LOOPBACK, Running
from support.live_server import medbench_serve

pytestmark = pytest.mark.slow

CAP = 40
HEADER_TIMEOUT_S = Limits.header_timeout_s
SLACK_S = 4.0  # scheduling on a loaded machine; the point is "closed", not the exact second


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    top = tmp_path_factory.mktemp("faults-limits")
    publish_fixture(top / "data")
    with medbench_serve(top / "data", top / "server.log", "--max-connections", str(CAP)) as running:
        yield running
        assert running.alive()
    assert "Traceback" not in running.log()


def connect(server: Running, timeout_s: float = 10.0) -> socket.socket:
    return socket.create_connection((LOOPBACK, server.port), timeout=timeout_s)


def read_response(conn: socket.socket) -> tuple[int, dict[str, str], bytes]:
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = conn.recv(65536)
        if not chunk:
            break
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), headers, body


def closed_after(conn: socket.socket, limit_s: float) -> float:
    """Seconds until the server closes ``conn`` (EOF or reset), reading anything it sends; fails after ``limit_s``."""
    start = time.monotonic()
    conn.settimeout(0.5)
    while time.monotonic() - start < limit_s:
        try:
            if conn.recv(65536) == b"":
                return time.monotonic() - start
        except TimeoutError:
            continue
        except ConnectionError:
            return time.monotonic() - start
    raise AssertionError(f"the server kept the connection open for {limit_s} s")


def still_serving(server: Running) -> None:
    response = httpx.get(f"{server.base}/v1/stats", timeout=10)
    assert response.status_code == 200 and response.json()["results"] > 0


def test_an_oversized_header_block_is_431_json(server: Running) -> None:
    for size in (70 * 1024, 1024 * 1024):  # one header over the limit; a 1 MB one (bounded here, not 20 MB)
        with connect(server) as conn:
            conn.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * size + b"\r\n\r\n")
            status, headers, body = read_response(conn)
        assert status == 431, (status, body[:200])
        assert headers["content-type"] == "application/json" and headers["connection"] == "close"
        error = json.loads(body)
        assert error["error"] == "headers_too_large" and "65536" in error["message"]
    # many headers that are each small but add up are refused the same way
    with connect(server) as conn:
        conn.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Many: aaaaaaaaaaaaaaaa\r\n" * 5000 + b"\r\n")
        assert read_response(conn)[0] == 431
    # below the limit is answered normally
    with connect(server) as conn:
        conn.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Fine: " + b"a" * 30_000 + b"\r\nConnection: close\r\n\r\n")
        assert read_response(conn)[0] == 200
    still_serving(server)


def test_unfinished_headers_do_not_grow_memory(server: Running) -> None:
    before = server.rss_bytes()
    conns = [connect(server) for _ in range(20)]
    try:
        for conn in conns:  # 20 clients each trying to hold 4 MB of an unfinished header
            conn.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
            for _ in range(4):
                try:
                    conn.sendall(b"a" * (1024 * 1024))
                except OSError:
                    break  # refused and closed: what is wanted
        grown = server.rss_bytes() - before
        assert grown < 64 * 1024 * 1024, f"server grew by {grown / 2**20:.0f} MiB"
    finally:
        for conn in conns:
            conn.close()
    still_serving(server)


def test_a_slowloris_client_is_closed(server: Running) -> None:
    with connect(server) as conn:
        conn.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        start = time.monotonic()
        closed = False
        for i in range(int(HEADER_TIMEOUT_S + SLACK_S) * 2):  # one header line every half second, never the end
            try:
                conn.sendall(f"X-Slow-{i}: x\r\n".encode())
                conn.settimeout(0.5)
                if conn.recv(1024) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break
        elapsed = time.monotonic() - start
    assert closed, "a client that never finished its headers was kept"
    assert HEADER_TIMEOUT_S - 1 <= elapsed <= HEADER_TIMEOUT_S + SLACK_S, elapsed
    still_serving(server)


def test_idle_connections_are_closed(server: Running) -> None:
    fresh = connect(server)  # connects and never sends a byte
    kept = connect(server)
    try:
        kept.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        status, headers, _ = read_response(kept)
        assert status == 200 and headers.get("connection") != "close"
        idle = closed_after(kept, KEEP_ALIVE_S + SLACK_S)
        assert idle >= KEEP_ALIVE_S - 1, idle
        silent = closed_after(fresh, HEADER_TIMEOUT_S + SLACK_S)  # counted from its connect, overlapping the above
        assert silent + idle >= HEADER_TIMEOUT_S - 1
    finally:
        fresh.close()
        kept.close()
    still_serving(server)


def test_half_open_connections_beyond_the_cap_get_server_busy(server: Running) -> None:
    held = []
    try:
        for _ in range(CAP + 10):  # more than the cap, each an unfinished request
            conn = connect(server)
            conn.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            held.append(conn)
        time.sleep(0.5)
        busy = httpx.get(f"{server.base}/v1/stats", timeout=10)
        assert busy.status_code == 503, busy.text
        assert busy.json()["error"] == "server_busy" and busy.headers["content-type"] == "application/json"
        # the held ones expire with the header timeout; then a normal client is served again
        deadline = time.monotonic() + HEADER_TIMEOUT_S + 2 * SLACK_S
        while time.monotonic() < deadline:
            response = httpx.get(f"{server.base}/v1/stats", timeout=10)
            if response.status_code == 200:
                break
            time.sleep(0.5)
        assert response.status_code == 200
    finally:
        for conn in held:
            conn.close()
    log = server.log()
    assert f"connection cap {CAP} reached" in log
    assert log.count(f"connection cap {CAP} reached") <= 4  # rate-limited, not one line per refusal
    assert "was not complete after" in log  # the expired heads were logged


def test_the_log_says_what_was_refused(server: Running) -> None:
    log = server.log()
    assert "refused a header block over the limit (431)" in log
