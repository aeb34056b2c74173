"""Real servers for the production-instance tests: a PostgreSQL 15 cluster (support.postgres) and a Redis server, each
started by the test session on a private loopback port in a temporary directory, and stopped after.

PostgreSQL refuses to run as root, so when the tests run as root (CI) the cluster is created and run
as `nobody` (setpriv). Missing binaries fail the test with the package to install: these tests are
never skipped silently (scripts/setup installs `postgresql` and `redis-server`).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass

import pytest
from support.postgres import START_TIMEOUT, free_port, need_binary, postgres  # noqa: F401  (the fixture, for e2e tests)
from support.processes import stop_group  # noqa: F401  (the deploy tests stop their daemons with it)


@dataclass
class Redis:
    port: int

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@pytest.fixture(scope="session")
def redis(tmp_path_factory) -> Redis:
    """redis-server on 127.0.0.1:<free port>, no persistence."""
    binary = need_binary(shutil.which("redis-server") or "/usr/bin/redis-server", "redis-server")
    base = tmp_path_factory.mktemp("redis")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(base), "--protected-mode", "yes"],
                            stdout=open(base / "redis.log", "w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"redis-server did not start: {(base / 'redis.log').read_text()}", pytrace=False)
        time.sleep(0.2)
    try:
        yield Redis(port)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
