"""Real HTTP servers for client, CLI and browser tests: the app on a free loopback port.

``serve_in_thread`` runs uvicorn in a thread of the test process (fast, for the client tests);
``serve_process`` runs ``medbench serve`` as a separate process, exactly as deployed (for the slow
end-to-end tests, which also need the server to notice new publishes by itself).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from bench._servers import LOOPBACK, free_port
from support.live_server import live_api
from support.paths import REPO  # noqa: F401  (re-exported for the client tests)



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
def serve_process(data_root: Path, log_path: Path) -> Iterator[str]:
    """``medbench serve`` in its own process (``live_server.live_api``), yielding its base URL."""
    with live_api(data_root, log_path) as server:
        yield server.base
