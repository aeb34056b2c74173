"""Fault tests run against real ``medbench serve`` processes on 127.0.0.1 (never anything else),
with every loop bounded in count and time: what is tested (timeouts, the connection cap, several
processes counting into one store) exists only in the deployed server, not in in-process clients."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from bench._servers import LOOPBACK, Running, free_port, running


@contextlib.contextmanager
def medbench_serve(data_root: Path, log_path: Path, *args: str) -> Iterator[Running]:
    """``medbench serve`` over ``data_root`` with extra arguments, on a free loopback port."""
    port = free_port()
    env = {"MEDBENCH_DATA": str(data_root), "MEDBENCH_PUBLIC_URL": ""}
    command = [sys.executable, "-m", "pipelines.cli.main", "serve", "--host", LOOPBACK, "--port", str(port), *args]
    with running(command, port, "/healthz", log_path, env=env) as server:
        yield server
