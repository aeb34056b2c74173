"""Many connections from one client, under a low open-file limit: every other request gets 200 or a
JSON 503, never a reset, and one client cannot take the connection cap.

The server runs under an open-file limit of 1,024 (soft and hard), as on many hosts; the test
process raises its own. The client holding connections binds to 127.0.0.2 (any 127/8 address
reaches loopback), so that the normal clients (127.0.0.1) are another peer to the server.
"""

from __future__ import annotations

import contextlib
import json
import resource
import socket
import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench._servers import LOOPBACK, Running, free_port, running
from support.api_data import publish_fixture

pytestmark = pytest.mark.slow

FD_LIMIT = 1024
HELD = 1100  # more than the server's descriptors
OTHER_PEER = "127.0.0.2"
PROBES = 200
LIMITED_START = (
    "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_NOFILE, ({n}, {n})); "
    "sys.argv = ['medbench', *sys.argv[1:]]; runpy.run_module('pipelines.cli.main', run_name='__main__')"
)


@contextlib.contextmanager
def limited_server(top: Path, *args: str) -> Iterator[Running]:
    """``medbench serve`` under an open-file limit of ``FD_LIMIT`` (its default cap: the limit minus 128)."""
    publish_fixture(top / "data")
    port = free_port()
    env = {"MEDBENCH_DATA": str(top / "data"), "MEDBENCH_PUBLIC_URL": ""}
    command = [sys.executable, "-c", LIMITED_START.format(n=FD_LIMIT), "serve", "--host", LOOPBACK, "--port", str(port),
               *args]
    with running(command, port, "/healthz", top / "server.log", env=env) as server:
        yield server
        assert server.alive()
    assert "Traceback" not in server.log()


@pytest.fixture(autouse=True)
def own_descriptors() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = HELD + 512
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= wanted, "the test needs about 1,600 descriptors"
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def hold(port: int, count: int) -> list[socket.socket]:
    """``count`` connections from ``OTHER_PEER``, each with an unfinished request head (or refused)."""
    held = []
    for _ in range(count):
        conn = socket.socket()
        conn.settimeout(10)
        conn.bind((OTHER_PEER, 0))
        try:
            conn.connect((LOOPBACK, port))
            conn.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        except OSError:
            pass  # counted by nothing: what matters is what the other clients get
        held.append(conn)
    return held


def probe(port: int, source: str = LOOPBACK) -> str:
    """One complete request: '200', '503 <error code>', or what went wrong instead."""
    try:
        with socket.socket() as conn:
            conn.settimeout(10)
            conn.bind((source, 0))
            conn.connect((LOOPBACK, port))
            conn.sendall(b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            received = b""
            while chunk := conn.recv(65536):
                received += chunk
    except ConnectionResetError:
        return "reset"
    except TimeoutError:
        return "timeout"
    except OSError as exc:
        return f"error {exc.__class__.__name__}"
    head, _, body = received.partition(b"\r\n\r\n")
    if head.startswith(b"HTTP/1.1 200"):
        return "200"
    if head.startswith(b"HTTP/1.1 503") and b"content-type: application/json" in head.lower():
        return f"503 {json.loads(body)['error']}"
    return "other " + head[:40].decode("latin-1") if head else "closed without an answer"


def probe_all(port: int, source: str = LOOPBACK) -> Counter[str]:
    with ThreadPoolExecutor(8) as pool:
        return Counter(pool.map(lambda _: probe(port, source), range(PROBES)))


def test_at_the_descriptor_limit_other_clients_get_200_or_json_503(tmp_path: Path) -> None:
    with limited_server(tmp_path, "--max-connections-per-client", "0") as server:  # only the process-wide cap
        held = hold(server.port, HELD)
        try:
            outcomes = probe_all(server.port)
        finally:
            for conn in held:
                conn.close()
        assert set(outcomes) <= {"200", "503 server_busy"}, outcomes
        assert "server_busy" in server.log()
        assert probe(server.port) == "200"


def test_one_client_cannot_take_the_connection_cap(tmp_path: Path) -> None:
    with limited_server(tmp_path) as server:  # the default per-client limit
        held = hold(server.port, HELD)
        try:
            outcomes = probe_all(server.port)
            refused = probe(server.port, source=OTHER_PEER)  # the holder's own next connection
        finally:
            for conn in held:
                conn.close()
        assert outcomes == Counter({"200": PROBES}), outcomes
        assert refused == "503 server_busy", refused
        assert "per-client" in server.log()
