"""Every reuse is counted exactly when several processes serve one data directory, and across restarts.

Before the SQLite store (``api.reuse``): two ``medbench serve`` on one data directory, 200 counted
lookups each, kept 200; ``uvicorn --workers 2`` kept 282 of 400. Here requests go over fresh
connections (``Connection: close``) so that the kernel spreads them over the workers.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from support.api_data import publish_fixture
from bench._servers import Running
from support.live_server import medbench_serve

pytestmark = pytest.mark.slow

LOOKUP = {"model": "medgemma-27b", "task": "clinicalqa@0"}
VISIBLE_S = 1.0  # the contract: every process shows the shared total within a second
SLACK_S = 2.0  # scheduling on a loaded machine


def lookups(server: Running, n: int) -> None:
    with httpx.Client(base_url=server.base, timeout=30, headers={"Connection": "close"}) as client:
        for _ in range(n):
            response = client.get("/v1/lookup", params=LOOKUP)
            assert response.status_code == 200 and response.json()["status"] == "evaluated"


def reuses(server: Running) -> int:
    return httpx.get(f"{server.base}/v1/stats", headers={"Connection": "close"}, timeout=30).json()["reuses"]


def settles_at(server: Running, expected: int, probes: int = 1) -> None:
    """Within a second (plus slack), ``probes`` fresh connections in a row all see ``expected``."""
    deadline = time.monotonic() + VISIBLE_S + SLACK_S
    while True:
        seen = [reuses(server) for _ in range(probes)]
        if seen == [expected] * probes:
            return
        assert max(seen) <= expected, f"counted more than happened: {seen} > {expected}"
        assert time.monotonic() < deadline, f"expected {expected} everywhere, saw {seen}"
        time.sleep(0.1)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    publish_fixture(tmp_path / "data")
    return tmp_path / "data"


def test_two_workers_count_every_reuse_and_keep_it_across_a_restart(data: Path, tmp_path: Path) -> None:
    with medbench_serve(data, tmp_path / "workers.log", "--workers", "2") as server:
        lookups(server, 300)
        settles_at(server, 300, probes=8)  # fresh connections: both workers answer
    log = (tmp_path / "workers.log").read_text()
    assert log.count("Started server process") >= 2, log  # really two workers
    assert "Traceback" not in log, log
    with medbench_serve(data, tmp_path / "again.log") as server:
        assert reuses(server) == 300  # every reuse was flushed at shutdown
        lookups(server, 5)
        settles_at(server, 305)


def test_two_servers_on_one_data_directory_count_every_reuse(data: Path, tmp_path: Path) -> None:
    with medbench_serve(data, tmp_path / "a.log") as a, medbench_serve(data, tmp_path / "b.log") as b:
        for _ in range(3):
            lookups(a, 50)
            lookups(b, 50)
        settles_at(a, 300)
        settles_at(b, 300)
    with medbench_serve(data, tmp_path / "c.log") as c:
        assert reuses(c) == 300
