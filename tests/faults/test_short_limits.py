"""The same limits with short values, on uvicorn in a thread of the test process (seconds, not tens
of seconds): a body that never arrives, a slow second request on a kept-alive connection, and the
cap's 503 for a connection that sends nothing, and a rate-limited log."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from api import http_protocol
from api.http_protocol import JsonErrorsHttpProtocol, Limits
from bench._servers import LOOPBACK, free_port

pytestmark = pytest.mark.slow

SHORT = Limits(header_timeout_s=1.0, body_timeout_s=1.0, max_connections=3)


async def echo_length(scope, receive, send) -> None:
    """Reads the whole body (so a missing body keeps it waiting), answers its length."""
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    body = str(size).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def port(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setattr(http_protocol, "current_limits", lambda: SHORT)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(echo_length, host=LOOPBACK, port=port, log_level="warning",
                                           http=JsonErrorsHttpProtocol, timeout_keep_alive=5))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    yield port
    server.should_exit = True
    thread.join(timeout=10)


def closed_within(conn: socket.socket, limit_s: float) -> float:
    start = time.monotonic()
    conn.settimeout(limit_s)
    try:
        while conn.recv(65536):
            pass
    except ConnectionError:
        pass
    elapsed = time.monotonic() - start
    assert elapsed < limit_s, "not closed"
    return elapsed


def test_a_body_that_never_arrives_is_closed(port: int) -> None:
    with socket.create_connection((LOOPBACK, port)) as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        assert 0.5 <= closed_within(conn, 5) < 5
    with socket.create_connection((LOOPBACK, port)) as conn:  # a complete body is answered
        conn.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\n0123456789")
        conn.settimeout(5)
        assert conn.recv(65536).endswith(b"\r\n\r\n10")


def test_a_slow_second_request_on_a_kept_alive_connection_is_closed(port: int) -> None:
    with socket.create_connection((LOOPBACK, port)) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.settimeout(5)
        assert conn.recv(65536).startswith(b"HTTP/1.1 200")
        conn.sendall(b"GET / HTTP/1.1\r\n")  # the next head, never finished: the head timeout, not keep-alive's 5 s
        assert closed_within(conn, 4) < 4


def test_the_cap_answers_a_silent_connection_too(port: int) -> None:
    held = [socket.create_connection((LOOPBACK, port)) for _ in range(SHORT.max_connections)]
    try:
        time.sleep(0.2)
        with socket.create_connection((LOOPBACK, port)) as extra:  # sends nothing: answered after BUSY_WAIT_S
            extra.settimeout(http_protocol.BUSY_WAIT_S + 3)
            received = b""
            while b"\r\n\r\n" not in received or not received.endswith(b"}"):
                chunk = extra.recv(65536)
                if not chunk:
                    break
                received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in head
        assert json.loads(body)["error"] == "server_busy"
    finally:
        for conn in held:
            conn.close()


def test_a_flood_of_unparsable_requests_is_logged_a_few_times(port: int, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="uvicorn.error"):
        for _ in range(50):
            with socket.create_connection((LOOPBACK, port)) as conn:
                conn.sendall(b"G\x00T / HTTP/1.1\r\nHost: x\r\n\r\n")
                conn.settimeout(5)
                assert conn.recv(65536).startswith(b"HTTP/1.1 400")
    lines = [r for r in caplog.records if r.getMessage().startswith("Invalid HTTP request received.")]
    assert len(lines) <= 2, [r.getMessage() for r in lines]  # not 50 (0 when a line went out just before)
