"""The API as it is deployed (``medbench serve``: one uvicorn worker, a separate process) over a data directory.

In-process test clients skip the HTTP parser, the event loop and the network; clients that nobody
here wrote (schemathesis, generated clients, raw sockets) and concurrent load need the real thing.
"""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

from bench._servers import LOOPBACK, Running, free_port, running


@contextlib.contextmanager
def medbench_serve(data_root: Path, log_path: Path, *args: str, ready_path: str = "/healthz",
                   env: dict[str, str] | None = None) -> Iterator[Running]:
    """``medbench serve`` over ``data_root`` with extra arguments, on a free loopback port; links use
    the origin requests come to. ``env``: more of the server's environment (a plug-in's PYTHONPATH)."""
    port = free_port()
    env = {"MEDBENCH_DATA": str(data_root), "MEDBENCH_PUBLIC_URL": "", **(env or {})}
    command = [sys.executable, "-m", "pipelines.cli.main", "serve", "--host", LOOPBACK, "--port", str(port), *args]
    with running(command, port, ready_path, log_path, env=env) as server:
        yield server


def live_api(data_root: Path, log_path: Path) -> contextlib.AbstractContextManager[Running]:
    """The API over ``data_root`` with default options, ready once its OpenAPI document answers."""
    return medbench_serve(data_root, log_path, ready_path="/v1/openapi.json")


def raw_request(port: int, request: bytes, timeout_s: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """Send exact bytes (no client-side normalisation or encoding) and read one HTTP/1.1 response."""
    with socket.create_connection((LOOPBACK, port), timeout=timeout_s) as conn:
        conn.sendall(request)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = conn.recv(65536)
            if not chunk:
                break
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, headers, body
