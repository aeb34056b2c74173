"""What answers the MCP tools: this process's tables (``LocalAnswers``) or a medbench server (``RemoteAnswers``).

Each tool is a read question of ``api.questions``, and each source answers every tool one way.
``LocalAnswers`` serves ``/mcp`` inside ``medbench serve`` and ``medbench mcp --data DIR``: it asks
``api.asking.ask``, as the question's ``/v1`` route does (one version per answer), so the
structured content is the ``/v1`` body decoded; an ``evaluated`` lookup counts a reuse in the same
shared store. ``RemoteAnswers`` serves ``medbench mcp --api-url URL``: it asks that server the
question's route with the tool's arguments through ``api.client`` (so the answers are that
server's bodies, its reuses count there) and turns a failure into the server's own ``{error,
message}``, or ``server_unreachable``.

Both return ``(body, warehouse_version)``, or raise ``ApiError``; ``api.mcp_server`` makes MCP results of them.
"""

from __future__ import annotations

from typing import Any, Protocol

import anyio.to_thread
import msgspec

from api.agent_tools import ToolSpec
from api.asking import ask
from api.client import request_of
from api.errors import ApiError
from api.questions import ReadQuestion, resolve

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
        answer, tables = await ask(tool.question, self.service, {}, args, self._base(base))
        if answer.counts_reuse:  # an evaluated lookup counts a reuse, as its GET does
            self.service.reuses.add()
        version = tables.version if tables is not None else self.service.store.peek_version()
        return msgspec.json.decode(answer.prepared.body), version

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
            return self._ask(tool.question, args), self.client.last_version
        except ClientError as exc:
            if exc.body is not None:
                raise ApiError(400, exc.body["error"], exc.body["message"]) from None
            raise ApiError(503, "server_unreachable", exc.message) from None

    def _ask(self, question: ReadQuestion, args: Any) -> Any:
        """The question's route on that server, asked with the tool's arguments (or its own way, ``remote``)."""
        if question.remote is not None:
            return resolve(question.remote)(self.client, args)
        path, query = request_of(question, args)
        return self.client.get(path, **query)

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
