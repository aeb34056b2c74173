"""The table of read questions (``api.questions``): a new question is one entry plus its answer function.

A toy question is registered here, with nothing else written for it, and found on every surface the
table derives: its ``/v1`` route (and the OpenAPI document), its MCP tool (listed, and called over
``/mcp`` and through another server), its typed client method, its CLI command and its page on the
website (its answer as HTML, a form of its parameters, listed on ``/questions``). Every built-in
question has a site page too: a hand-made one the site serves, or the derived one. The leaderboard
CSV, assembled by the same function as ``/v1/leaderboard``, honours ``tier`` and ``metric``.
"""

from __future__ import annotations

import csv
import dataclasses
import html
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest
from litestar.testing import TestClient
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from support.api_data import log_everything
from support.serving import serve_in_thread

from api.agent_sources import RemoteAnswers
from api.agent_tools import arguments, tool_by_name
from api.app import create_app
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
from api.site.answer_html import MAX_ITEMS, type_of
from api.site.answer_html import html as to_html
from api.site.routes import site_route_handlers
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
    for question in registered():
        fields = {f.name for f in msgspec.structs.fields(question.args)}
        assert fields == {p.attr for p in question.params}, question.name
    with pytest.raises(ValueError, match="not the fields of ToyArgs"):
        check(dataclasses.replace(TOY, name="toy2", params=TOY.params[:1]))
    with pytest.raises(ValueError, match="'leaderboard' is already another question's"):
        register(dataclasses.replace(TOY, name="toy3", client="leaderboard", tool=None, cli=None, path="/v1/toy3"))
    with pytest.raises(ValueError, match="is not under /v1/"):
        check(dataclasses.replace(TOY, name="toy5", path="/toy5"))
    with pytest.raises(ValueError, match="its site page '/toy' is already another question's"):
        check(dataclasses.replace(TOY, name="toy6", route=False, tool=None, client=None, cli=None))


def _answer(page: str) -> dict[str, str]:
    """The scalar fields of a derived page's answer, as text."""
    fields = re.findall(r'<dd data-field="(\w+)">(.*?)</dd>', page, re.DOTALL)
    return {name: html.unescape(re.sub(r"<[^>]+>", "", value)) for name, value in fields}


def test_the_toy_has_a_site_page(base: str) -> None:
    """The toy's page, derived from its declaration alone: its answer (the /v1 body's fields), a form of
    its parameters, its /v1 route as the JSON twin, the site's HTML errors, and a line on /questions."""
    page = httpx.get(f"{base}/toy", params={"word": "hi", "times": 2})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert _answer(page.text) == {"echo": "hi hi", "tasks": "3"}
    assert '<link rel="alternate" type="application/json" href="/v1/toy?word=hi&amp;times=2">' in page.text
    assert "<h1>A toy question</h1>" in page.text and "Echoes a word." in page.text
    assert re.search(r'<input type="text" id="q-word" name="word" value="hi" placeholder="hello" title="the word">',
                     page.text)
    assert re.search(r'<input type="number" id="q-times" name="times" value="2" placeholder="1">', page.text)
    assert "MCP tool <code>toy_echo</code>" in page.text and "CLI <code>medbench toy</code>" in page.text
    assert _answer(httpx.get(f"{base}/toy").text) == {"echo": "hello", "tasks": "3"}  # the declared defaults
    assert _answer(httpx.get(f"{base}/toy", params={"word": "", "times": ""}).text)["echo"] == "hello"  # empty boxes
    hostile = httpx.get(f"{base}/toy", params={"word": "<b>x</b>"}).text
    assert "<b>x</b>" not in hostile and _answer(hostile)["echo"] == "<b>x</b>"
    for params, says in (({"times": 9}, "at most 5"), ({"times": "many"}, "Expected `int`")):
        refused = httpx.get(f"{base}/toy", params=params)  # the answer's own error, a Struct's: HTML 400s
        assert refused.status_code == 400 and "text/html" in refused.headers["content-type"], params
        assert says in html.unescape(refused.text), params
    assert httpx.head(f"{base}/toy").status_code == 200
    listed = httpx.get(f"{base}/questions").text
    row = re.search(r'<tr id="question-toy">.*?</tr>', listed)
    assert row and '<a href="/toy">/toy</a>' in row.group() and "GET /v1/toy" in row.group()
    assert '<a href="/questions">' in httpx.get(f"{base}/about").text


def test_every_question_has_a_page_on_the_site(own_data: tuple[Path, str], tmp_path: Path) -> None:
    """A question's hand-made page is one the site serves; every other built-in question's derived page
    shows its /v1 answer (or, missing a required parameter, its form), the transparency log's included."""
    root = own_data[0]
    log_everything(root, tmp_path / "kept.checkpoint")
    with TestClient(create_app(root)) as client:
        result = client.get("/v1/results").json()["results"][0]
        release = client.get("/v1/releases").json()["releases"][0]["id"]
        provider, name = result["model"]["slug"].split("/")
        values = {"run_id": result["run_id"], "id": release, "release_id": release, "provider": provider,
                  "name": name, "slug": "clinicalqa", "submission_id": "0123456789ab"}
        for question in registered():
            path = question.site_path
            for key, value in values.items():
                path = path.replace("{" + key + "}", value)
            page = client.get(path)
            assert "text/html" in page.headers["content-type"], question.name
            if question.site_page is not None:
                assert page.status_code == 200 or (question.name, page.status_code) == ("submission", 404)
                continue
            assert page.status_code == 200, (question.name, page.text[-300:])
            assert f"<h1>{question.summary}</h1>" in html.unescape(page.text), question.name
            if 'id="question-unasked"' in page.text:  # required parameters not given: the form alone
                assert question.name in ("lookup", "log_consistency")
                continue
            twin = re.search(r'<link rel="alternate" type="application/json" href="([^"]+)">', page.text)
            body, shown = client.get(html.unescape(twin.group(1))).json(), _answer(page.text)
            assert [k for k, v in body.items() if not isinstance(v, (dict, list))] == list(shown), question.name
            for field, value in shown.items():
                assert value == (str(body[field]).lower() if isinstance(body[field], bool) else str(body[field]))
        lookup = client.get("/lookup", params={"model": result["model"]["slug"], "task": result["task"]})
        assert _answer(lookup.text)["status"] == "evaluated" and result["run_id"] in lookup.text
        consistency = client.get("/log/consistency", params={"from": 1})
        assert _answer(consistency.text)["from"] == "1"
        results = client.get("/results", params={"limit": 2, "offset": 1}).text
        assert _answer(results)["limit"] == "2" and _answer(results)["offset"] == "1"
        listed = client.get("/v1/results").json()["results"]
        shown_ids = re.findall(r"<tr><td>([0-9a-f]{12})</td>", results)  # a row's first column: its run id
        assert shown_ids == [r["run_id"] for r in listed[1:3]]


def test_a_page_the_site_cannot_honour_is_refused() -> None:
    """A question naming a hand-made page the site lacks, or deriving one on a path the site's pages
    have, stops the site from being built."""
    for changes, says in (({"site_page": "/nowhere"}, "which the site does not serve"),
                          ({"path": "/v1/agents"}, "already a page of the site")):
        question = register(dataclasses.replace(TOY, **{"name": "toy7", "path": "/v1/toy7", "tool": None,
                                                        "client": None, "cli": None, **changes}))
        try:
            with pytest.raises(ValueError, match=says):
                site_route_handlers()
        finally:
            unregister(question.name)


def test_a_long_list_is_cut_to_keep_the_page_small() -> None:
    """An answer's list shows its first MAX_ITEMS items and says how many more the JSON has."""
    shown = to_html({"echo": "x", "tasks": 1, "words": [f"w{i}" for i in range(MAX_ITEMS + 7)]})
    assert shown.count("<li>") == MAX_ITEMS and "7 more, not shown here" in shown
    rows = to_html([{"echo": f"e{i}", "tasks": i} for i in range(MAX_ITEMS + 1)], type_of(list[Toy]))
    assert rows.count("<tr>") == MAX_ITEMS + 1 and "1 more, not shown here" in rows  # the header and MAX_ITEMS rows
    assert "<th>echo</th><th>tasks</th>" in rows
