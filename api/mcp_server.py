"""The MCP server: the tools of ``api.agent_tools`` over streamable HTTP at ``/mcp`` and over stdio.

Built on the official SDK's low-level ``mcp.server.lowlevel.Server`` (tools and resources with the
schemas we generate, rather than schemas inferred from Python signatures). Over HTTP it is one more
route of the Litestar app (``mcp_route_handlers``): an ASGI handler at ``/mcp`` hands POST and
DELETE to the SDK's ``StreamableHTTPSessionManager``, run by the app's lifespan. It is stateless
(every request stands alone, answered as plain JSON), so ``medbench serve --workers N`` needs no
shared sessions, and its transport security allows only loopback hosts and the host of
``MEDBENCH_PUBLIC_URL`` (DNS rebinding). Any other method on ``/mcp`` is ``method_not_allowed``
like everywhere else, and every refusal of the SDK (plain text for a bad Host or Content-Type, a
JSON-RPC error body for a body that is not JSON-RPC, DELETE: there are no sessions to end) is turned
into the contract's JSON ``{error, message}``. A body over ``MAX_BODY_BYTES`` is ``payload_too_large``
413 before the SDK sees it (``api.http_protocol`` refuses it first when serving with httptools).

A tool failure is an MCP tool error (``isError: true``) whose structured content is the same
``{error, message}`` as ``/v1`` would answer, with the same code.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
import msgspec
from litestar import Litestar, asgi
from litestar.handlers import ASGIRouteHandler
from litestar.types import Message, Receive, Scope, Send
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from api import schemas
from api.agent_sources import RESOURCES, Answers
from api.agent_tools import arguments, tool_by_name, tool_definitions, unknown_tool
from api.errors import ApiError
from api.http_protocol import Limits
from api.responses import CACHE_ERROR, NO_WAREHOUSE, prepare, request_origin, respond

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
MCP_METHODS = "POST, DELETE"
MAX_BODY_BYTES = Limits.max_body_bytes  # the server's one body limit; the SDK's own default is 4 MiB
_CODES = {400: "bad_request", 403: "forbidden", 404: "not_found", 405: "method_not_allowed", 406: "not_acceptable",
          413: "payload_too_large", 415: "unsupported_media_type", 421: "misdirected_request",
          422: "invalid_parameter"}
VERSION_META = "medbench/warehouse_version"
INSTRUCTIONS = (
    "medbench publishes evaluations of medical AI models on open SNUH datasets. Rule one: look up before you "
    "run. Call `lookup` before evaluating a model on a medbench task; if it is evaluated, cite the result and "
    "download its predictions (`predictions_url`) instead of recomputing."
)


def _result(body: Any, version: str | None, error: bool = False) -> types.CallToolResult:
    text = msgspec.json.encode(body).decode()
    return types.CallToolResult.model_validate({
        "content": [{"type": "text", "text": text}], "structuredContent": body, "isError": error,
        "_meta": {VERSION_META: version or NO_WAREHOUSE},
    })


def _failure(exc: ApiError, version: str | None = None) -> types.CallToolResult:
    return _result(msgspec.to_builtins(schemas.Error(error=exc.code, message=exc.message)), version, error=True)


def _base(ctx: Any) -> str | None:
    """The origin the HTTP request came to (self-links as ``/v1`` builds them); None over stdio."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    return request_origin(scope) if scope else None


def build_server(source: Answers, version: str = "") -> Server[Any]:
    """The MCP server answering from ``source`` (read-only tools, the agents' text as resources)."""
    tools = [types.Tool.model_validate(definition) for definition in tool_definitions()]
    by_name = tool_by_name()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            tool = by_name.get(params.name)
            if tool is None:
                raise unknown_tool(params.name)
            body, served = await source.call(tool, arguments(tool, params.arguments), _base(ctx))
            return _result(body, served)
        except ApiError as exc:
            return _failure(exc, source.served_version())
        except Exception:
            log.exception("MCP tool %s failed", params.name)
            return _failure(ApiError(500, "internal_error", "internal error; it has been logged"))

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource.model_validate({"uri": uri, "name": name, "description": text, "mimeType": mime})
            for uri, (name, text, mime, _) in RESOURCES.items()
        ])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = await source.resource(uri, _base(ctx))
        except ApiError as exc:  # a JSON-RPC error carrying the /v1 code, not a logged crash
            raise MCPError(types.INVALID_PARAMS, exc.message, {"error": exc.code, "message": exc.message}) from None
        return types.ReadResourceResult.model_validate(
            {"contents": [{"uri": uri, "mimeType": RESOURCES[uri][2], "text": text}]})

    return Server("medbench", version=version, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool, on_list_resources=list_resources, on_read_resource=read_resource)


def allowed_hosts(public_url: str | None) -> TransportSecuritySettings:
    """Loopback on any port, and the host of the public URL (with or without a port)."""
    hosts = ["127.0.0.1", "localhost", "[::1]"]
    origins: list[str] = []
    if public_url and (netloc := urlsplit(public_url).netloc):
        hosts.append(netloc.rsplit("@", 1)[-1])
    patterns = sorted({h for host in hosts for h in (host, f"{host}:*")})
    for host in hosts:
        origins += [f"http://{host}", f"https://{host}", f"http://{host}:*", f"https://{host}:*"]
    return TransportSecuritySettings(allowed_hosts=patterns, allowed_origins=origins)


class McpEndpoint:
    """``/mcp`` in the Litestar app: the SDK's session manager, started and stopped by the app's lifespan."""

    def __init__(self, source: Answers, public_url: str | None, store: Any, version: str = ""):
        self.server = build_server(source, version)
        self.security = allowed_hosts(public_url)
        self.store = store  # for the warehouse header of our own refusals
        self.manager: StreamableHTTPSessionManager | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self, _: Litestar) -> AsyncIterator[None]:
        # a manager runs once: a fresh one for every start of the app
        self.manager = StreamableHTTPSessionManager(self.server, json_response=True, stateless=True,
                                                    security_settings=self.security,
                                                    max_request_body_size=MAX_BODY_BYTES)
        async with self.manager.run():
            yield
        self.manager = None

    def _refuse(self, scope: Scope, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        version = self.store.peek_version() or NO_WAREHOUSE
        return respond(scope, prepare(schemas.Error(error=code, message=message)), version=version,
                       cache_control=CACHE_ERROR, status=status, extra_headers=headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("POST", "DELETE"):
            reply = self._refuse(scope, 405, "method_not_allowed",
                                 f"{scope['method']} is not allowed on {MCP_PATH}: the MCP transport takes "
                                 f"{MCP_METHODS}", {"allow": MCP_METHODS})
            await reply(scope, receive, send)
            return
        if self.manager is None:
            await self._refuse(scope, 503, "server_busy", "the MCP endpoint is not running")(scope, receive, send)
            return
        if scope["method"] == "POST":
            body = await self._read_body(scope, receive, send)
            if body is None:  # refused, or the client left
                return
            receive = _replay(body, receive)
        await self.manager.handle_request(scope, receive, _JsonErrors(send).send)

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or None once refused (over ``MAX_BODY_BYTES``: from its Content-Length before
        reading, else as it streams) or when the client has gone."""
        too_large = self._refuse(scope, 413, "payload_too_large",
                                 f"the request body is larger than {MAX_BODY_BYTES} bytes; send less",
                                 {"connection": "close"})
        length = next((v for k, v in scope["headers"] if k == b"content-length"), b"0")
        if length.isdigit() and int(length) > MAX_BODY_BYTES:
            await too_large(scope, receive, send)
            return None
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                await too_large(scope, receive, send)
                return None
            if not message.get("more_body", False):
                return bytes(body)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that yields the body already read, then whatever comes next (a disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


class _JsonErrors:
    """A ``send`` that turns the SDK's error responses (plain text, or JSON-RPC errors without an id)
    into ``{"error", "message"}`` JSON. MCP allows either body for an HTTP error; the SDK's client reads a
    JSON-RPC body only to answer a request it sent, and a request it can send is never refused here."""

    def __init__(self, send: Send):
        self._send = send
        self._start: Message | None = None
        self._chunks: list[bytes] = []

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            if message["status"] >= 400:
                self._start = message
                return
        elif message["type"] == "http.response.body" and self._start is not None:
            self._chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            status = self._start["status"]
            code = _CODES.get(status, "internal_error" if status >= 500 else "bad_request")
            body = msgspec.json.encode(schemas.Error(error=code, message=_sdk_message(b"".join(self._chunks), status)))
            kept = [(k, v) for k, v in self._start.get("headers", ())
                    if k not in (b"content-type", b"content-length", b"allow")]
            if status == 405:  # DELETE: a stateless server has no session to end
                kept.append((b"allow", b"POST"))
            await self._send({**self._start, "headers": [*kept, (b"content-type", b"application/json"),
                                                        (b"content-length", str(len(body)).encode())]})
            await self._send({"type": "http.response.body", "body": body})
            return
        await self._send(message)


def _sdk_message(raw: bytes, status: int) -> str:
    """The first line of the SDK's text, from a JSON-RPC error's ``message`` when it sent one."""
    text = raw.decode("utf-8", "replace").strip()
    with contextlib.suppress(msgspec.DecodeError, KeyError, TypeError):
        text = str(msgspec.json.decode(raw)["error"]["message"])
    if status == 405:
        text = "DELETE ends an MCP session, and this server is stateless (it keeps none): only POST is taken"
    return (text.splitlines() or ["refused"])[0][:200]


def mcp_route_handlers(endpoint: McpEndpoint) -> list[ASGIRouteHandler]:
    """The Litestar route for ``/mcp`` (every method reaches ``endpoint``; it refuses all but POST and DELETE)."""

    @asgi(MCP_PATH, copy_scope=False)
    async def mcp_transport(scope: Scope, receive: Receive, send: Send) -> None:
        await endpoint(scope, receive, send)

    return [mcp_transport]


async def serve_stdio(source: Answers, version: str = "") -> None:
    """Serve MCP over this process's stdin and stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    server = build_server(source, version)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
