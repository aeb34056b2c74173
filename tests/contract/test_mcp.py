"""The MCP server, driven by the official SDK's own client over both transports.

HTTP: ``/mcp`` of a live ``medbench serve`` on 127.0.0.1 (same process, tables and reuse store as
``/v1``). stdio: ``medbench mcp`` spawned twice, against that server's ``--api-url`` and against
the data directory (``--data``). Each: the tools are listed with typed schemas, ``lookup`` answers
exactly ``/v1/lookup``'s body, an error is ``isError`` with the ``/v1`` code, and an evaluated
lookup counts a reuse.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from api.agent_tools import TOOLS
from support.api_data import RUN_IDS, publish_fixture
from bench._servers import Running
from support.live_server import live_api
from support.paths import REPO
from medbench.layout import DataDir
from medbench.submissions import SubmissionStore

LOOKUP = {"model": "medgemma-27b", "task": "clinicalqa@0"}
SUBMITTED: list[str] = []  # the id of the submission the server fixture stores


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, Path]]:
    root = tmp_path_factory.mktemp("mcp") / "data"
    publish_fixture(root)
    store = SubmissionStore.for_data(DataDir(root))
    SUBMITTED.append(store.create(owner="acme", model={"slug": "acme/m1"}, tasks=["clinicalqa@0"], tier="baseline",
                                  model_spec_hash="a" * 64, quota=None).submission.id)
    store.close()
    with live_api(root, root.parent / "server.log") as running:
        yield running, root
    assert "Traceback" not in running.log(), running.log()


@asynccontextmanager
async def http_session(base: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(f"{base}/mcp") as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(*args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "pipelines.cli.main", "mcp", *args],
                                   cwd=str(REPO), env={"PYTHONPATH": str(REPO)})
    with open(Path("/dev/null"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def reuses(base: str) -> int:
    return httpx.get(f"{base}/v1/stats").json()["reuses"]


async def check_session(session: ClientSession, base: str, counted_here: bool = True) -> None:
    listed = await session.list_tools()
    assert {t.name for t in listed.tools} == {t.name for t in TOOLS}
    for tool in listed.tools:
        assert tool.input_schema["type"] == "object" and tool.output_schema["type"] == "object"
    before = reuses(base)
    answer = await session.call_tool("lookup", LOOKUP)
    assert not answer.is_error
    assert answer.structured_content == httpx.get(f"{base}/v1/lookup", params=LOOKUP).json()
    assert answer.structured_content["status"] == "evaluated"
    assert json.loads(answer.content[0].text) == answer.structured_content
    if counted_here:  # the MCP lookup and the /v1 one (a --data server counts in the store, seen within 1 s)
        assert reuses(base) == before + 2

    failed = await session.call_tool("get_result", {"run_id": "0123456789ab"})
    assert failed.is_error and failed.structured_content["error"] == "run_not_found"
    failed = await session.call_tool("compare", {"a": "\t", "b": "000000000000"})
    assert failed.is_error and failed.structured_content["error"] == "invalid_parameter"
    assert "'a'" in failed.structured_content["message"]
    failed = await session.call_tool("lookup", {"model": "x", "task": "no-such-task"})
    assert failed.is_error and failed.structured_content["error"] == "task_not_found"

    board = await session.call_tool("leaderboard", {"task": "clinicalqa@0", "limit": 1})
    assert board.structured_content == httpx.get(f"{base}/v1/leaderboard?task=clinicalqa@0&limit=1").json()
    by_parse = await session.call_tool("leaderboard", {"task": "clinicalqa@0", "metric": "parse_rate"})
    assert by_parse.structured_content == httpx.get(f"{base}/v1/leaderboard?task=clinicalqa@0&metric=parse_rate").json()
    assert by_parse.structured_content["metric"] == "parse_rate"
    for tier in ("baseline", "official"):  # the shared data holds baseline results only: official is rows: []
        by_tier = await session.call_tool("leaderboard", {"task": "clinicalqa@0", "tier": tier})
        assert by_tier.structured_content == httpx.get(f"{base}/v1/leaderboard?task=clinicalqa@0&tier={tier}").json()
        assert bool(by_tier.structured_content["rows"]) == (tier == "baseline")
    failed = await session.call_tool("leaderboard", {"task": "clinicalqa@0", "metric": "no_such_metric"})
    assert failed.is_error and failed.structured_content["error"] == "metric_not_found"
    assert "'no_such_metric'" in failed.structured_content["message"] and "parse_rate" in failed.structured_content["message"]
    release = httpx.get(f"{base}/v1/releases").json()["releases"][0]["id"]  # issue 28: tools take release
    as_of = await session.call_tool("leaderboard", {"task": "clinicalqa@0", "release": release})
    assert as_of.structured_content == httpx.get(f"{base}/v1/leaderboard?task=clinicalqa@0&release={release}").json()
    failed = await session.call_tool("get_result", {"run_id": RUN_IDS["medgemma-cqa0"], "release": "nonsense"})
    assert failed.is_error and failed.structured_content["error"] == "release_not_found"
    models = await session.call_tool("find_models", {"q": "MEDGEMMA"})
    assert models.structured_content == httpx.get(f"{base}/v1/models", params={"q": "MEDGEMMA"}).json()
    assert models.structured_content["total"] >= 1
    link = await session.call_tool("predictions_url", {"run_id": RUN_IDS["medgemma-cqa0"]})
    assert link.structured_content["predictions_url"].endswith(f"/artifacts/{RUN_IDS['medgemma-cqa0']}/predictions.parquet")
    for name, args in (("list_tasks", {}), ("stats", {}), ("get_task", {"slug": "clinicalqa"})):
        assert not (await session.call_tool(name, args)).is_error, name
    status = await session.call_tool("submission_status", {"id": SUBMITTED[0]})
    assert status.structured_content == httpx.get(f"{base}/v1/submissions/{SUBMITTED[0]}").json()
    assert status.structured_content["state"] == "awaiting_approval"
    missing = await session.call_tool("submission_status", {"id": "0" * 12})
    assert missing.is_error and "submission_not_found" in missing.content[0].text
    resources = await session.list_resources()
    assert {str(r.uri) for r in resources.resources} == {"medbench://agents", "medbench://llms.txt"}
    text = await session.read_resource("medbench://llms.txt")
    assert "lookup" in text.contents[0].text


def test_http_transport(server: tuple[Running, Path]) -> None:
    running, _ = server

    async def main() -> None:
        async with http_session(running.base) as session:
            await check_session(session, running.base)

    anyio.run(main)


def test_stdio_against_the_api(server: tuple[Running, Path]) -> None:
    running, _ = server

    async def main() -> None:
        async with stdio_session("--api-url", running.base) as session:
            await check_session(session, running.base)

    anyio.run(main)


def test_stdio_against_a_data_directory(server: tuple[Running, Path]) -> None:
    running, root = server

    before = reuses(running.base)

    async def main() -> None:
        async with stdio_session("--data", str(root)) as session:
            listed = await session.list_tools()
            assert len(listed.tools) == len(TOOLS)
            answer = await session.call_tool("lookup", LOOKUP)
            v1 = httpx.get(f"{running.base}/v1/lookup", params=LOOKUP).json()
            # same result; self-links differ (no request origin over stdio), so compare without them
            assert answer.structured_content["result"]["run_id"] == v1["result"]["run_id"]
            failed = await session.call_tool("get_result", {"run_id": "zz"})
            assert failed.is_error and failed.structured_content["error"] == "run_not_found"
            assert failed.meta["medbench/warehouse_version"] == httpx.get(f"{running.base}/healthz").json()["warehouse_version"]
        # its evaluated lookup counted in the data directory's shared store (flushed at exit), besides /v1's
        assert reuses(running.base) == before + 2

    anyio.run(main)


def test_other_methods_on_mcp_are_405_with_allow(server: tuple[Running, Path]) -> None:
    running, _ = server
    for method in ("GET", "PUT", "PATCH"):
        response = httpx.request(method, f"{running.base}/mcp")
        assert response.status_code == 405 and response.headers["allow"] == "POST, DELETE"
        assert response.json()["error"] == "method_not_allowed"
    response = httpx.post(f"{running.base}/v1/lookup", json={})
    assert response.status_code == 405 and "POST" not in response.headers["allow"]


def test_hosts_outside_the_allowed_list_are_refused_as_json(server: tuple[Running, Path]) -> None:
    running, _ = server
    response = httpx.post(f"{running.base}/mcp", headers={"host": "evil.example", "content-type": "application/json",
                                                          "accept": "application/json, text/event-stream"},
                          content=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert response.status_code == 421 and response.json()["error"] == "misdirected_request"


def test_stateless_http_works_with_several_workers(tmp_path: Path) -> None:
    """``medbench serve --workers 2``: no MCP session lives in one worker's memory, so every request,
    whichever worker takes it, is answered; every evaluated lookup counts once in the shared store."""
    from bench._servers import LOOPBACK, free_port, running

    root = tmp_path / "data"
    publish_fixture(root)
    port = free_port()
    command = [sys.executable, "-m", "pipelines.cli.main", "serve", "--host", LOOPBACK, "--port", str(port),
               "--workers", "2"]
    env = {"MEDBENCH_DATA": str(root), "MEDBENCH_PUBLIC_URL": ""}
    with running(command, port, "/v1/openapi.json", tmp_path / "server.log", env=env) as server:
        async def main() -> None:
            for _ in range(6):  # a fresh connection, and so possibly another worker, each time
                async with http_session(server.base) as session:
                    answer = await session.call_tool("lookup", LOOKUP)
                    assert answer.structured_content["status"] == "evaluated"

        anyio.run(main)
        # Each worker flushes its count into the shared store every second and reads the others' from
        # it (cached 0.25 s); a worker sees its own unflushed reuses at once, so one read of 6 does not
        # mean every worker agrees yet: wait until eight reads in a row (over fresh connections, so
        # both workers) say 6.
        seen: list[int] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and seen[-8:] != [6] * 8:
            seen.append(reuses(server.base))
            time.sleep(0.05)
        assert seen[-8:] == [6] * 8, seen
        assert "Traceback" not in server.log(), server.log()
