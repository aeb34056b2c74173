"""Browsers are served from the answer cache too, with exactly the CORS headers of the full path.

Browsers send an ``Origin`` header on every cross-origin fetch; such requests used to bypass the
answer cache (7.5x Datasette in ``bench.api_load`` against 23x without the header). A replay now adds
the headers Litestar's CORS middleware adds for that request. What is checked, on a real server
(uvicorn in this process, so that calls reaching the Litestar app can be counted) over raw sockets,
so that header lines are compared as sent, in order, duplicates included:

- a repeat with ``Origin`` is replayed (the Litestar app is not called again);
- its head is byte-identical to the head of the same request that missed the cache and went through
  Litestar (GET, with a ``Cookie``, HEAD, a 304 revalidation), ``Date`` aside;
- an answer kept from a request with ``Origin`` is replayed without any CORS header to a request
  without one.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar import Litestar

from bench._servers import LOOPBACK
from support.api_data import RUN_IDS
from support.serving import serve_in_thread

RUN = RUN_IDS["medgemma-cqa0"]
LOOKUP = "/v1/lookup?model=medgemma-27b&task=clinicalqa@0"
BOARD = "/v1/leaderboard?task=clinicalqa@0"
ORIGIN = "Origin: https://browser.example"


class Framework:
    """HTTP requests that reached the Litestar app inside the answer cache (a replay never does)."""

    def __init__(self) -> None:
        self.count = 0


@pytest.fixture(scope="module")
def framework() -> Iterator[Framework]:
    calls = Framework()
    original = Litestar.__call__

    async def counting(app, scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            calls.count += 1
        await original(app, scope, receive, send)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Litestar, "__call__", counting)
        yield calls


@pytest.fixture(scope="module")
def port(shared_data: tuple[Path, str], framework: Framework) -> Iterator[int]:
    with serve_in_thread(shared_data[0]) as base:
        yield int(base.rsplit(":", 1)[1])


def exchange(port: int, method: str, path: str, host: str, *headers: str) -> tuple[list[bytes], bytes]:
    """One request over a raw socket; the response's header lines exactly as received, and its body."""
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n" + "".join(f"{h}\r\n" for h in headers)
    with socket.create_connection((LOOPBACK, port), timeout=10) as conn:
        conn.sendall((head + "Connection: close\r\n\r\n").encode())
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    raw_head, _, body = received.partition(b"\r\n\r\n")
    return raw_head.split(b"\r\n"), body


def without_date(lines: list[bytes]) -> list[bytes]:
    return [line for line in lines if not line.lower().startswith(b"date:")]


def cors_lines(lines: list[bytes]) -> list[bytes]:
    return [line for line in lines if line.lower().startswith((b"access-control-", b"vary:"))]


@pytest.mark.parametrize(("case", "method", "path", "extra"), [
    ("get", "GET", BOARD, ()),
    ("cookie", "GET", BOARD, ("Cookie: session=1",)),  # with a cookie Litestar echoes the origin and adds Vary
    ("result", "GET", f"/v1/results/{RUN}", ()),
    ("lookup", "GET", LOOKUP, ()),
])
def test_a_replayed_cross_origin_answer_is_the_full_paths_byte_for_byte(
        port: int, framework: Framework, case: str, method: str, path: str, extra: tuple[str, ...]) -> None:
    host = f"{case}.cors.example"  # a host of its own: the first request cannot be in the cache
    before = framework.count
    full = exchange(port, method, path, host, ORIGIN, *extra)
    assert framework.count == before + 1  # the miss went through Litestar (and its CORS middleware)
    assert full[0][0] == b"HTTP/1.1 200 OK" and cors_lines(full[0]), full[0]
    replayed = exchange(port, method, path, host, ORIGIN, *extra)
    assert framework.count == before + 1  # the repeat was replayed by the answer cache
    assert without_date(replayed[0]) == without_date(full[0])
    assert replayed[1] == full[1]


def etag_of(lines: list[bytes]) -> str:
    return next(line.split(b": ", 1)[1] for line in lines if line.lower().startswith(b"etag:")).decode()


def test_head_and_304_replays_carry_the_same_cors_headers_as_the_full_path(port: int, framework: Framework) -> None:
    host = "revalidate.cors.example"
    # before a GET keeps it, a HEAD of a lookup goes through Litestar as itself, and a 304 is never kept
    before = framework.count
    full_head = exchange(port, "HEAD", LOOKUP, host, ORIGIN)
    revalidate = f"If-None-Match: {etag_of(full_head[0])}"
    full_304 = exchange(port, "GET", LOOKUP, host, ORIGIN, revalidate)
    exchange(port, "GET", LOOKUP, host, ORIGIN)  # kept
    assert framework.count == before + 3
    assert full_head[0][0] == b"HTTP/1.1 200 OK" and full_304[0][0] == b"HTTP/1.1 304 Not Modified"
    replayed_head = exchange(port, "HEAD", LOOKUP, host, ORIGIN)
    replayed_304 = exchange(port, "GET", LOOKUP, host, ORIGIN, revalidate)
    assert framework.count == before + 3  # both replayed
    assert without_date(replayed_head[0]) == without_date(full_head[0]) and replayed_head[1] == b""
    assert without_date(replayed_304[0]) == without_date(full_304[0]) and replayed_304[1] == b""
    assert cors_lines(replayed_head[0]) and cors_lines(replayed_304[0])


def test_an_answer_kept_for_a_browser_has_no_cors_headers_without_origin(port: int, framework: Framework) -> None:
    host = "plain.cors.example"
    crossing = exchange(port, "GET", BOARD, host, ORIGIN)  # the miss that keeps the answer
    calls = framework.count
    plain = exchange(port, "GET", BOARD, host)
    assert framework.count == calls  # replayed
    assert plain[1] == crossing[1] and cors_lines(crossing[0])
    assert cors_lines(plain[0]) == []
    assert without_date(plain[0]) == [line for line in without_date(crossing[0]) if line not in cors_lines(crossing[0])]
