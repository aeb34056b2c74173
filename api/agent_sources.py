"""What answers the MCP tools: this process's tables (``LocalAnswers``) or a medbench server (``RemoteAnswers``).

``LocalAnswers`` serves ``/mcp`` inside ``medbench serve`` and ``medbench mcp --data DIR``: it takes
the ``Service``'s current ``Tables`` once per call (one version per answer, as a ``/v1`` request
does) and calls the same ``api.answers`` functions as the routes, so the structured content is the
``/v1`` body decoded; an ``evaluated`` lookup counts a reuse in the same shared store.
``RemoteAnswers`` serves ``medbench mcp --api-url URL``: it asks that server's ``/v1`` routes
through ``api.client`` (so the answers are that server's bodies, its reuses count there) and
turns a failure into the server's own ``{error, message}``, or ``server_unreachable``.

Both return ``(body, warehouse_version)``, or raise ``ApiError``; ``api.mcp_server`` makes MCP results of them.
"""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import quote

import anyio.to_thread
import msgspec

from api import answers, model_answers, release_views, schemas
from api.agent_tools import LOG_TOOLS, ToolSpec
from api.errors import ApiError
from api.responses import prepare
from api.routes import log as log_routes
from api.routes.compare import comparison

Answered = tuple[Any, str | None]

RESOURCES = {  # uri -> (name, description, mime type, website path)
    "medbench://agents": ("agents", "medbench's page for AI agents: rule one, routes, examples", "text/html",
                          "/agents"),
    "medbench://llms.txt": ("llms.txt", "medbench for language models: what it is and how to use it", "text/plain",
                            "/llms.txt"),
}


class Answers(Protocol):
    async def call(self, tool: ToolSpec, args: Any, base: str | None) -> Answered: ...

    async def resource(self, uri: str, base: str | None) -> str: ...

    def served_version(self) -> str | None:
        """The warehouse version last served (for the ``_meta`` of an error)."""


def _unknown_resource(uri: str) -> ApiError:
    return ApiError(404, "not_found", f"no resource {uri[:200]!r}; the resources are {', '.join(RESOURCES)}")


class LocalAnswers:
    """Answers from a ``Service`` of this process (its tables, its reuse counter)."""

    def __init__(self, service: Any):
        self.service = service

    def served_version(self) -> str | None:
        return self.service.store.peek_version()

    def _base(self, base: str | None) -> str:
        return self.service.settings.public_url or base or "http://127.0.0.1:8000"

    async def call(self, tool: ToolSpec, args: Any, base: str | None) -> Answered:
        service = self.service
        if tool.name == "submission_status":  # the submissions store, not the warehouse
            return await anyio.to_thread.run_sync(self._submission, args.id)
        if tool.name in LOG_TOOLS:  # the transparency log, verified (api.routes.log)
            version = service.tables({}).version
            prepared = await anyio.to_thread.run_sync(log_routes.tool_answer, service, tool.name, args)
            return msgspec.json.decode(prepared.body), version
        tables = release_views.as_of(service.tables({}), service.settings.data, getattr(args, "release", None))
        base = self._base(base)
        name = tool.name
        if name == "lookup":
            answer = answers.lookup(tables, args.model, args.task, base, args.judge)
            if answer.counts_reuse:
                service.reuses.add()
            prepared = answer.prepared
        elif name == "leaderboard":
            prepared = answers.leaderboard(tables, args.task, args.model_type, args.limit, base, args.metric,
                                           args.tier, args.judge)
        elif name == "get_result":
            prepared = answers.result(tables, args.run_id, base)
        elif name == "compare":  # the route module owns the memoised (thread-run) computation
            prepared = prepare(await comparison(service, tables, args.a, args.b))
        elif name == "list_tasks":
            prepared = answers.tasks(tables)
        elif name == "get_task":
            prepared = answers.task(tables, args.slug, args.version, service.settings.data)
        elif name == "find_models":
            prepared = model_answers.models(tables, args.q, args.type, args.provider, args.limit, args.offset)
        elif name == "predictions_url":
            prepared = answers.predictions_link(tables, args.run_id, base)
        elif name == "stats":
            prepared = answers.stats(tables, service.reuses.count)
        else:  # pragma: no cover - TOOLS and this list are written together
            raise ApiError(500, "internal_error", f"tool {name} has no answer")
        return msgspec.json.decode(prepared.body), tables.version

    def _submission(self, submission_id: str) -> Answered:
        from warehouse.submissions import SubmissionNotFound

        try:
            found = self.service.submissions.get(submission_id)
        except SubmissionNotFound:
            raise ApiError(404, "submission_not_found", f"no submission {submission_id!r}") from None
        return msgspec.to_builtins(found), self.service.store.peek_version()

    async def resource(self, uri: str, base: str | None) -> str:
        from api.site import agent_text

        if uri not in RESOURCES:
            raise _unknown_resource(uri)
        tables = self.service.tables({})
        render = agent_text.agents_html if uri == "medbench://agents" else agent_text.llms_text
        return render(tables, self._base(base))


class RemoteAnswers:
    """Answers from a medbench server's ``/v1`` (the blocking client runs in a worker thread)."""

    def __init__(self, client: Any):
        self.client = client

    def served_version(self) -> str | None:
        return self.client.last_version

    async def call(self, tool: ToolSpec, args: Any, base: str | None) -> Answered:
        return await anyio.to_thread.run_sync(self._call, tool, args)

    def _call(self, tool: ToolSpec, args: Any) -> Answered:
        from api.client import ClientError

        try:
            return self._ask(tool.name, args)
        except ClientError as exc:
            if exc.body is not None:
                raise ApiError(400, exc.body["error"], exc.body["message"]) from None
            raise ApiError(503, "server_unreachable", exc.message) from None

    def _ask(self, name: str, args: Any) -> Answered:
        get = self.client.get
        if name == "lookup":
            body = get("/v1/lookup", model=args.model, task=args.task, release=args.release)
        elif name == "leaderboard":
            body = get("/v1/leaderboard", task=args.task, model_type=args.model_type, limit=args.limit,
                       metric=args.metric, tier=args.tier, release=args.release)
        elif name in ("get_result", "predictions_url"):
            body = get(f"/v1/results/{quote(args.run_id, safe='')}", release=args.release)
            if name == "predictions_url":
                body = msgspec.to_builtins(schemas.PredictionsLink(
                    run_id=body["run_id"], task=body["task"], predictions_url=body["predictions_url"],
                    predictions_sha256=body["predictions_sha256"]))
        elif name == "compare":
            body = get("/v1/compare", a=args.a, b=args.b)
        elif name == "list_tasks":
            body = get("/v1/tasks")
        elif name == "get_task":
            body = get(f"/v1/tasks/{quote(args.slug, safe='@')}", version=args.version)
        elif name == "find_models":
            body = get("/v1/models", q=args.q, type=args.type, provider=args.provider, limit=args.limit,
                       offset=args.offset)
        elif name == "stats":
            body = get("/v1/stats")
        elif name == "submission_status":
            body = get(f"/v1/submissions/{quote(args.id, safe='')}")
        elif name == "log_checkpoint":
            body = get("/v1/log/checkpoint")
        elif name == "log_entries":
            body = get("/v1/log/entries", start=args.start, end=args.end)
        elif name == "log_consistency":
            body = get("/v1/log/consistency", **{"from": args.from_, "to": args.to})
        elif name == "result_proof":
            body = get(f"/v1/results/{quote(args.run_id, safe='')}/proof")
        elif name == "release_proof":
            body = get(f"/v1/releases/{quote(args.id, safe='')}/proof")
        else:  # pragma: no cover
            raise ApiError(500, "internal_error", f"tool {name} has no answer")
        return body, self.client.last_version

    async def resource(self, uri: str, base: str | None) -> str:
        if uri not in RESOURCES:
            raise _unknown_resource(uri)
        return await anyio.to_thread.run_sync(self._text, RESOURCES[uri][3])

    def _text(self, path: str) -> str:
        from api.client import ClientError

        try:
            return self.client.text(path)
        except ClientError as exc:
            raise ApiError(503, "server_unreachable", exc.message) from None
