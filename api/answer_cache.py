"""Answers kept for repeats: an ASGI wrapper in front of the Litestar app replays hot GETs.

Agents ask ``/v1/lookup`` before every run, mostly the same few questions. Once the app has
answered a request (parameters validated, body encoded, ETag hashed), the same request gets the same
bytes until the next publish. Yet Litestar's routing, parameter parsing and middleware cost more
than twice the rest of such an answer (``bench.api_load`` measures both: a constant Litestar route
ran at under a third of the rate of a constant bare ASGI answer on a 2-core machine), so
``AnswerCache``, the outermost ASGI app, looks the request up first and only a miss reaches Litestar.
The handlers know nothing about it: the wrapper keeps what they answered, from the outside.

"The same request" is deliberately narrow, so that a replay is byte-for-byte what the app would
answer (``replay_key``):

- GET or HEAD, to the same path with the same raw query string (a different spelling of the same
  parameters is simply another entry);
- the same Host, scheme and root path: self-links in bodies are built from them;
- no ``Origin`` header: CORS headers are the framework's, so cross-origin requests always take the
  full path;
- ``If-None-Match`` and HEAD are honoured per request by ``api.responses.respond``, as in handlers.

What is kept: only answers of the routes listed in ``REPLAYED`` (lookup, leaderboard, results
listing, one result), only a 200, and only when the response is exactly what ``respond`` makes of
its body (so that a replay cannot differ from it by a header). It is kept in the ``Tables.bodies``
of the version named by its ``X-Medbench-Warehouse`` header, and only if that is still the version
the wrapper saw when the request came in; entries therefore live and die with one version's bounded
cache, and a replay never mixes versions. Keys are bounded too: a long query string or Host is
never kept. A first HEAD is asked of the app as a GET, to learn the body its headers describe,
except on the lookup, whose GET counts a reuse (the HEAD then goes through as itself).

Reuses (``api.reuse``) count as the handler counts them: a replayed GET of an ``evaluated`` lookup
counts one (a 304 revalidation too; HEAD never), through the same ``Service.reply``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from api.params import MAX_CACHED_PARAMETER_CHARS
from api.responses import MAX_HOST_CHARS, WAREHOUSE_HEADER, Prepared, respond

if TYPE_CHECKING:
    from api.service import Service

REPLAYABLE_METHODS = frozenset({"GET", "HEAD"})
_WAREHOUSE = WAREHOUSE_HEADER.encode()


@dataclass(frozen=True, slots=True)
class Answer:
    """What a replay needs: the encoded body, and whether a GET of it counts as a reuse (lookups)."""

    prepared: Prepared
    counts_reuse: bool = False


class _LookupStatus(msgspec.Struct):
    status: str


def _evaluated(body: bytes) -> bool:
    """Whether a lookup's body is ``evaluated`` (its GET counts a reuse)."""
    return msgspec.json.decode(body, type=_LookupStatus).status == "evaluated"


@dataclass(frozen=True)
class Replayed:
    """One opted-in route: its path (a regular expression) and, for lookups, which answers count a reuse."""

    path: re.Pattern[str]
    counts_reuse: Callable[[bytes], bool] | None = None


REPLAYED = (
    Replayed(re.compile(r"/v1/lookup"), counts_reuse=_evaluated),
    Replayed(re.compile(r"/v1/leaderboard")),
    Replayed(re.compile(r"/v1/results")),
    Replayed(re.compile(r"/v1/results/[^/]+")),
)


def replay_key(scope: Scope) -> tuple | None:
    """The request's identity for replay, or None when it must go through the framework."""
    if scope["type"] != "http" or scope["method"] not in REPLAYABLE_METHODS:
        return None
    host = b""
    for name, value in scope["headers"]:
        if name == b"host":
            host = value
        elif name == b"origin":
            return None
    query = scope["query_string"]
    if len(query) > MAX_CACHED_PARAMETER_CHARS or len(host) > MAX_HOST_CHARS:
        return None
    return ("replay", scope["path"], query, host, scope.get("scheme", "http"), scope.get("root_path", ""))


class _Capture:
    """A ``send`` that records the response (and passes it on unless ``forward`` is false)."""

    __slots__ = ("_send", "_forward", "status", "headers", "chunks", "complete")

    def __init__(self, send: Send, forward: bool):
        self._send = send
        self._forward = forward
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.complete = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", ()))
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))
            self.complete = not message.get("more_body", False)
        if self._forward:
            await self._send(message)


class AnswerCache:
    """The outer ASGI app: replays kept answers, passes everything else to ``app`` (the Litestar app)."""

    def __init__(self, app: ASGIApp, service: Service, routes: tuple[Replayed, ...] = REPLAYED):
        self.app = app
        self.service = service
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = replay_key(scope)
        tables = self.service.store.current() if key is not None else None
        if tables is None:
            await self.app(scope, receive, send)
            return
        answer = tables.bodies.get(key)
        if answer is not None:
            await self.service.reply(scope, tables, answer)(scope, receive, send)
            return
        route = self._route(scope)
        if route is None or (scope["method"] == "HEAD" and route.counts_reuse is not None):
            await self.app(scope, receive, send)
            return
        head = scope["method"] == "HEAD"
        asked = {**scope, "method": "GET", "state": dict(scope.get("state", {}))} if head else scope  # own state
        capture = _Capture(send, forward=not head)
        await self.app(asked, receive, capture.send)
        kept = self._keepable(asked, capture, tables.version, route)
        if kept is not None:
            tables.bodies.put(key, kept)
        if head:  # the client asked for headers only: answer from what was kept, or ask again as HEAD
            if kept is not None:
                await self.service.reply(scope, tables, kept)(scope, receive, send)
            else:
                await self.app(scope, receive, send)

    def _route(self, scope: Scope) -> Replayed | None:
        path = scope["path"]
        if root_path := scope.get("root_path", ""):  # as Litestar strips it before routing
            path = path.split(root_path, maxsplit=1)[-1]
        for route in self.routes:
            if route.path.fullmatch(path):
                return route
        return None

    @staticmethod
    def _keepable(scope: Scope, capture: _Capture, version: str, route: Replayed) -> Answer | None:
        """The answer to keep, when the app's response is a complete 200 of ``version`` that a replay
        reproduces exactly (same headers as ``respond`` makes of the same body); else None."""
        if capture.status != 200 or not capture.complete:
            return None
        if next((value for name, value in capture.headers if name == _WAREHOUSE), None) != version.encode():
            return None
        prepared = Prepared(b"".join(capture.chunks))
        if respond(scope, prepared, version=version)._headers != capture.headers:
            return None
        return Answer(prepared, counts_reuse=route.counts_reuse(prepared.body) if route.counts_reuse else False)

