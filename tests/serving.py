"""Real HTTP servers for client, CLI and browser tests: the app on a free loopback port.

``serve_in_thread`` runs uvicorn in a thread of the test process (fast, for the client tests);
``serve_process`` runs ``medbench serve`` as a separate process, exactly as deployed (for the slow
end-to-end tests, which also need the server to notice new publishes by itself).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def closed_port() -> int:
    """A port nothing listens on (bound and released; nothing else here grabs loopback ports)."""
    return free_port()


def _wait_until_up(url: str, deadline_s: float, alive=lambda: True) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if not alive():
            raise RuntimeError(f"the server for {url} exited before answering")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {deadline_s} s")


@contextlib.contextmanager
def serve_in_thread(data_root: Path) -> Iterator[str]:
    import uvicorn

    from api.app import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(data_root), host=LOOPBACK, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://{LOOPBACK}:{port}"
    try:
        _wait_until_up(f"{base}/healthz", 30, thread.is_alive)
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextlib.contextmanager
def serve_process(data_root: Path, log_path: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    port = free_port()
    full_env = {**os.environ, "MEDBENCH_DATA": str(data_root), "MEDBENCH_PUBLIC_URL": "", "PYTHONUNBUFFERED": "1",
                **(env or {})}
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "serve", "--host", LOOPBACK, "--port", str(port)],
                                cwd=REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://{LOOPBACK}:{port}"
        try:
            _wait_until_up(f"{base}/healthz", 60, lambda: proc.poll() is None)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
