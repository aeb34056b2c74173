"""HTTP servers in their own processes, on loopback, for load tests and benchmarks.

A server under load must not share a Python interpreter (and its GIL) with the clients that load
it, and a crash or a hang must show up as a failed request, not as a frozen test. So servers run as
subprocesses on a free loopback port, their output goes to a log file (a pipe nobody reads would
eventually block them), and ``running`` waits until a readiness URL answers before yielding.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench._measure import REPO_ROOT, child_env
from pipelines.cli.process_group import stop_group  # noqa: F401  (one implementation, shared with `medbench ui`)

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Running:
    process: subprocess.Popen
    base: str  # http://127.0.0.1:<port>
    port: int
    log_path: Path | None  # None: output discarded

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def rss_bytes(self) -> int:
        """Resident memory of the server process now (VmRSS from /proc)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(f"no VmRSS for process {self.process.pid}")

    def alive(self) -> bool:
        return self.process.poll() is None


def uvicorn_command(factory: str, port: int, access_log: bool = False) -> list[str]:
    """One uvicorn worker (the service's own deployment: its caches and counter are per process)."""
    command = [sys.executable, "-m", "uvicorn", "--factory", factory, "--host", LOOPBACK, "--port", str(port),
               "--workers", "1", "--log-level", "warning"]
    return command if access_log else [*command, "--no-access-log"]


@contextlib.contextmanager
def running(
    command: Sequence[str],
    port: int,
    ready_path: str,
    log_path: Path | None,
    env: Mapping[str, str] | None = None,
    start_timeout_s: float = 120.0,
) -> Iterator[Running]:
    """Start ``command`` (which must listen on ``port``), wait for ``ready_path`` to answer, stop it on exit."""
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path or os.devnull, "wb") as log:
        process = subprocess.Popen(list(command), cwd=REPO_ROOT, env=child_env(env), stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = Running(process=process, base=f"http://{LOOPBACK}:{port}", port=port, log_path=log_path)
    try:
        _wait_ready(server, ready_path, start_timeout_s)
        yield server
    finally:
        stop(process)


def _wait_ready(server: Running, path: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s  # start-up time only; nothing here measures speed
    while True:
        try:
            httpx.get(server.base + path, timeout=5.0)
            return
        except httpx.TransportError:
            if not server.alive():
                raise RuntimeError(f"server exited with {server.process.returncode} before answering:\n{server.log()}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"server did not answer {path} within {timeout_s:.0f} s:\n{server.log()}") from None
            time.sleep(0.1)


def stop(process: subprocess.Popen, timeout_s: float = 30.0) -> int:
    """SIGINT (a graceful shutdown: uvicorn runs the app's shutdown hooks), then SIGKILL if it hangs."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode
