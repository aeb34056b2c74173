"""The table of read questions (``api.questions``): a new question is one entry plus its answer function.

A toy question is registered here, with nothing else written for it, and found on every surface the
table derives: its ``/v1`` route (and the OpenAPI document), its MCP tool (listed, and called over
``/mcp`` and through another server), its typed client method and its CLI command. The leaderboard
CSV, assembled by the same function as ``/v1/leaderboard``, honours ``tier`` and ``metric``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from support.serving import serve_in_thread

from api.agent_sources import RemoteAnswers
from api.agent_tools import arguments, tool_by_name
from api.client import ApiClient, UsageError
from api.questions import (
    Cli,
    CliArg,
    Param,
    ReadQuestion,
    Tool,
    check,
    register,
    registered,
    unregister,
)
from api.responses import Prepared, prepare
from pipelines.cli.main import main


class ToyArgs(msgspec.Struct, forbid_unknown_fields=True):
    word: str = "hello"
    times: int = 1


class Toy(msgspec.Struct):
    echo: str
    tasks: int


def toy_answer(asked: Any, args: ToyArgs) -> Prepared:
    """The toy's answer: the word repeated, and how many task versions the tables asked about hold."""
    if args.times > 5:
        from api.errors import invalid_parameter

        raise invalid_parameter("query parameter 'times': at most 5")
    return prepare(Toy(echo=" ".join([args.word] * args.times), tasks=len(asked.tables.tasks)))


def _word() -> Any:
    from litestar.params import Parameter

    return Parameter(default="hello", description="The word to echo.")


def _times() -> Any:
    from litestar.params import Parameter

    return Parameter(default=1, ge=1, description="How many times.")


TOY = ReadQuestion(
    "toy", "/v1/toy", (Param("word", str, _word, cli=CliArg("--word", "the word")),
                       Param("times", int, _times, cli=CliArg("--times", type=int))),
    ToyArgs, toy_answer, Toy, operation_id="getToy", summary="A toy question", description="Echoes a word.",
    errors={400: "`invalid_parameter`"}, tool=Tool("toy_echo", "Toy", "Echo a word."), client="toy",
    cli=Cli("toy", "echo a word (a toy read question)"),
)


@pytest.fixture(scope="module")
def toy() -> Iterator[ReadQuestion]:
    register(TOY)
    try:
        yield TOY
    finally:
        unregister(TOY.name)


@pytest.fixture(scope="module")
def base(toy: ReadQuestion, shared_data: tuple[Path, str]) -> Iterator[str]:
    with serve_in_thread(shared_data[0]) as url:  # built after the toy was registered
        yield url


def test_the_toy_has_a_documented_route(base: str) -> None:
    answer = httpx.get(f"{base}/v1/toy", params={"word": "hi", "times": 2})
    assert answer.status_code == 200 and answer.json() == {"echo": "hi hi", "tasks": 3}
    assert httpx.get(f"{base}/v1/toy").json() == {"echo": "hello", "tasks": 3}  # the declared defaults
    refused = httpx.get(f"{base}/v1/toy", params={"times": 0})  # Litestar validates the declared bound
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_parameter"
    assert httpx.head(f"{base}/v1/toy").status_code == 200
    document = httpx.get(f"{base}/v1/openapi.json").json()
    operation = document["paths"]["/v1/toy"]["get"]
    assert operation["operationId"] == "getToy"
    assert [(p["name"], p["description"]) for p in operation["parameters"]] == [
        ("word", "The word to echo."), ("times", "How many times.")]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Toy"}


async def _mcp(base: str, name: str, arguments: dict[str, Any]) -> tuple[list[str], Any]:
    async with streamable_http_client(f"{base}/mcp") as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        called = await session.call_tool(name, arguments)
        return [t.name for t in listed.tools], called


def test_the_toy_is_an_mcp_tool(base: str) -> None:
    names, called = anyio.run(_mcp, base, "toy_echo", {"word": "hey", "times": 3})
    assert names[-1] == "toy_echo" and "lookup" in names
    assert not called.is_error and called.structured_content == {"echo": "hey hey hey", "tasks": 3}
    assert called.structured_content == httpx.get(f"{base}/v1/toy", params={"word": "hey", "times": 3}).json()


def test_the_toy_through_another_server(base: str) -> None:
    """``medbench mcp --api-url``: the tool asks the toy's route on that server with its arguments."""
    tool = tool_by_name()["toy_echo"]
    with ApiClient(base) as client:
        body, version = anyio.run(RemoteAnswers(client).call, tool, arguments(tool, {"word": "yo"}), None)
    assert body == {"echo": "yo", "tasks": 3} and version


def test_the_toy_has_a_client_method_and_a_cli_command(base: str, capsys: pytest.CaptureFixture) -> None:
    with ApiClient(base) as client:
        assert client.toy("hi", times=2) == Toy(echo="hi hi", tasks=3)
        with pytest.raises(UsageError):
            client.toy(times=9)
    assert main(["toy", "--word", "x", "--times", "2", "--api-url", base]) == 0
    assert json.loads(capsys.readouterr().out) == {"echo": "x x", "tasks": 3}
    assert main(["toy", "--times", "9", "--api-url", base]) == 2  # the server's invalid_parameter: usage error
    assert "invalid_parameter" in capsys.readouterr().err


def _csv(base: str, **params: Any) -> list[dict[str, str]]:
    answer = httpx.get(f"{base}/tasks/clinicalqa/leaderboard.csv", params={"version": 0, **params})
    assert answer.status_code == 200, answer.text
    return list(csv.DictReader(io.StringIO(answer.text)))


def test_the_csv_honours_tier_and_metric(base: str) -> None:
    """The one change of the table: the CSV download was the primary metric's whole board whatever
    ``tier`` and ``metric`` said; it is now ``/v1/leaderboard``'s rows for them."""
    for params in ({}, {"metric": "parse_rate"}, {"tier": "official"}, {"tier": "baseline", "metric": "parse_rate"},
                   {"model_type": "llm", "metric": "parse_rate"}):
        rows = httpx.get(f"{base}/v1/leaderboard", params={"task": "clinicalqa@0", **params}).json()["rows"]
        assert [(r["run_id"], r["rank"], r["metric"]["name"]) for r in rows] == [
            (r["run_id"], int(r["rank"]), r["metric_name"]) for r in _csv(base, **params)], params
    assert _csv(base) and not _csv(base, tier="official")
    assert {r["metric_name"] for r in _csv(base, metric="parse_rate")} == {"parse_rate"}


def test_every_declaration_is_one_surfaces_can_derive_from() -> None:
    """The built-in questions pass the check ``register`` makes of a new one; a question whose
    parameters are not its Struct's fields, or that takes a name another one has, is refused."""
    import dataclasses

    for question in registered():
        fields = {f.name for f in msgspec.structs.fields(question.args)}
        assert fields == {p.attr for p in question.params}, question.name
    with pytest.raises(ValueError, match="not the fields of ToyArgs"):
        check(dataclasses.replace(TOY, name="toy2", params=TOY.params[:1]))
    with pytest.raises(ValueError, match="'leaderboard' is already another question's"):
        register(dataclasses.replace(TOY, name="toy3", client="leaderboard", tool=None, cli=None, path="/v1/toy3"))
