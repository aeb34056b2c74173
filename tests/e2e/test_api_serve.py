"""``medbench serve``: its arguments, its lazy imports, and a real uvicorn server answering over HTTP."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx

from api.server import display_base, example_urls
from api.tables import TableStore
from support.api_data import RUN_IDS
from pipelines.cli import serve as serve_command
from medbench.layout import DataDir
from support.paths import REPO as ROOT



def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve_command.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


def test_arguments_and_defaults() -> None:
    args = parse()
    assert (args.host, args.port, args.func) == ("127.0.0.1", 8000, serve_command.run)
    args = parse("--host", "0.0.0.0", "--port", "9001")
    assert (args.host, args.port) == ("0.0.0.0", 9001)
    assert (args.workers, args.max_connections) == (1, None)
    args = parse("--workers", "3", "--max-connections", "100")
    assert (args.workers, args.max_connections) == (3, 100)


def test_the_command_module_imports_no_server_libraries() -> None:
    probe = (
        "import sys, pipelines.cli.serve\n"
        "heavy = [m for m in ('uvicorn', 'litestar', 'duckdb', 'dagster') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_example_urls_come_from_the_published_data(own_data: tuple[Path, str]) -> None:
    tables = TableStore(DataDir(own_data[0])).current()
    base = display_base("0.0.0.0", 8000)
    assert base == "http://127.0.0.1:8000"
    urls = example_urls(base, tables)
    assert f"{base}/v1/leaderboard?task=clinicalqa@0" in urls
    # the top model's provider id is shared by two providers here, so the example uses its slug
    assert f"{base}/v1/lookup?model=openai/gpt-oss-20b&task=clinicalqa@0" in urls
    assert f"{base}/v1/openapi.json" in urls and f"{base}/healthz" in urls
    assert example_urls(base, None)[-1] == f"{base}/v1/openapi.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_answers_over_http_and_flushes_reuses_on_exit(own_data: tuple[Path, str]) -> None:
    root, version = own_data
    port = free_port()
    code = f"import argparse; from pipelines.cli.serve import run; run(argparse.Namespace(host='127.0.0.1', port={port}, access_log=False))"
    env = {**os.environ, "MEDBENCH_DATA": str(root), "PYTHONPATH": str(ROOT)}
    env.pop("MEDBENCH_PUBLIC_URL", None)
    server = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60  # waits for start-up; nothing here measures speed
        while True:
            try:
                health = httpx.get(f"{base}/healthz")
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
        assert health.json() == {"status": "ok", "warehouse_version": version}
        run = RUN_IDS["medgemma-cqa0"]
        lookup = httpx.get(f"{base}/v1/lookup", params={"model": "medgemma-27b", "task": "clinicalqa@0"})
        assert lookup.json()["result"]["url"] == f"{base}/r/{run}"
        head = httpx.head(f"{base}/v1/results/{run}")
        assert head.status_code == 200 and head.content == b""
        assert int(head.headers["content-length"]) == len(httpx.get(f"{base}/v1/results/{run}").content)
        missing = httpx.post(f"{base}/v1/lookup")
        assert missing.status_code == 405 and missing.headers["allow"] == "GET, HEAD"
    finally:
        server.send_signal(signal.SIGINT)
        output, _ = server.communicate(timeout=30)
    assert server.returncode == 0, output
    assert f"curl '{base}/v1/leaderboard?task=clinicalqa@0'" in output
    with sqlite3.connect(root / "state" / "reuses.sqlite3") as conn:
        assert conn.execute("SELECT n FROM reuses").fetchall() == [(1,)]
