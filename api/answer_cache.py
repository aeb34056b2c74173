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
- the same origin of self-links (``api.responses.link_origin``: ``MEDBENCH_PUBLIC_URL``, else the
  request's scheme, Host and root path), the very function the handlers build the links with, so a
  kept body is replayed only to requests whose links it holds;
- ``If-None-Match`` and HEAD are honoured per request by ``api.responses.respond``, as in handlers;
- an ``Origin`` header (browsers send one) does not change the body, only the headers: a replay adds
  the CORS headers Litestar's CORS middleware adds to that request (``CorsHeaders`` has that middleware
  compute them), so browsers are served from the cache too and get the same bytes as the full path.

Before any of that, for every route, a request that does not name exactly one host (two ``Host``
headers, or a Host other than an absolute-form target's authority: ``api.responses.host_conflict``)
is refused with 400 ``bad_request``: links built from one host and a key or a proxy's cache entry
built from the other is how one client would poison the answers of the next.

What is kept: only answers of the routes listed in ``REPLAYED`` (lookup, leaderboard, results
listing, one result, the inclusion proofs of results and releases), only a 200, and only when the response is exactly what ``respond`` makes of
its body (so that a replay cannot differ from it by a header). It is kept in the ``Tables.bodies``
of the version named by its ``X-Medbench-Warehouse`` header, and only if that is still the version
the wrapper saw when the request came in; entries therefore live and die with one version's bounded
cache, and a replay never mixes versions. Keys are bounded too: a long query string is never kept,
and the origin in a key is bounded as the links' is (a long or odd Host gives the server's address).
A proof is made from the transparency log's files, which change apart from the version: it is kept
with their state (sizes, mtimes, inodes) taken before the app read them, and replayed only while
they are unchanged, so that a log edited on disk answers ``log_unavailable``. The state is looked at
again at most once per the store's poll interval (``TableStore.poll_s``, 0.25 s), the same delay
within which a new warehouse version is seen: three ``stat`` calls on every replay cost the proof
route a quarter of its throughput (``bench/api_load``, docs/benchmarks.md).
A first HEAD is asked of the app as a GET, to learn the body its headers describe,
except on the lookup, whose GET counts a reuse (the HEAD then goes through as itself).

Reuses (``api.reuse``) count as the handler counts them: a replayed GET of an ``evaluated`` lookup
counts one (a 304 revalidation too; HEAD never), through the same ``Service.reply``.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec
from litestar.config.cors import CORSConfig
from litestar.middleware._internal.cors import CORSMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from api import schemas
from api.answer import Answer
from api.params import MAX_CACHED_PARAMETER_CHARS
from api.responses import (
    CACHE_ERROR,
    MAX_HOST_CHARS,
    NO_WAREHOUSE,
    WAREHOUSE_HEADER,
    Prepared,
    Reply,
    host_conflict,
    link_origin,
    prepare,
    respond,
)
from api.service import Service
from api.tables import Tables

REPLAYABLE_METHODS = frozenset({"GET", "HEAD"})
_WAREHOUSE = WAREHOUSE_HEADER.encode()


class _LookupStatus(msgspec.Struct):
    status: str


def _evaluated(body: bytes) -> bool:
    """Whether a lookup's body is ``evaluated`` (its GET counts a reuse)."""
    return msgspec.json.decode(body, type=_LookupStatus).status == "evaluated"


def _fresh(service: Service, stamp: Callable[[Service], object], kept: object) -> Callable[[], bool]:
    """Whether the files are still as ``kept``, looked at again at most once per poll interval; once
    changed, always False (the entry is replaced by the app's next answer)."""
    poll_s = getattr(service.store, "poll_s", 0.0)
    checked = {"until": -math.inf, "fresh": True}

    def fresh() -> bool:
        now = time.monotonic()
        if now >= checked["until"] and checked["fresh"]:
            checked["fresh"] = stamp(service) == kept
            checked["until"] = now + poll_s
        return checked["fresh"]

    return fresh


@dataclass(frozen=True)
class Replayed:
    """One opted-in route: its path (a regular expression) and, for lookups, which answers count a reuse."""

    path: re.Pattern[str]
    counts_reuse: Callable[[bytes], bool] | None = None
    stamp: Callable[[Service], object] | None = None  # the state of other files the answer is made from


def _log_stamp(service: Service) -> object:
    """The transparency log's files as the proof routes read them (``warehouse.tlog.reader.log_stamp``):
    a replayed proof is the app's answer only while they are unchanged (an edited log answers 503)."""
    from warehouse.tlog.reader import log_stamp

    return log_stamp(service.settings.data.root)


REPLAYED = (
    Replayed(re.compile(r"/v1/lookup"), counts_reuse=_evaluated),
    Replayed(re.compile(r"/v1/leaderboard")),
    Replayed(re.compile(r"/v1/results")),
    Replayed(re.compile(r"/v1/results/[^/]+")),
    Replayed(re.compile(r"/v1/(results|releases)/[^/]+/proof"), stamp=_log_stamp),
)


def replay_key(scope: Scope, public_url: str | None = None) -> tuple | None:
    """The request's identity for replay, or None when it must go through the framework: the path, the
    raw query string and the origin its self-links are built from (``link_origin``)."""
    if scope["type"] != "http" or scope["method"] not in REPLAYABLE_METHODS:
        return None
    query = scope["query_string"]
    if len(query) > MAX_CACHED_PARAMETER_CHARS:
        return None
    return ("replay", scope["path"], query, link_origin(scope, public_url))


MAX_ORIGIN_CHARS = MAX_HOST_CHARS + len("https://")  # a longer Origin's headers are not memoised
_MEMO_ENTRIES = 256


class CorsHeaders:
    """The headers Litestar's CORS middleware adds to the response to one request, for replays.

    Computed by that middleware itself (its ``send_wrapper``, on a response start without headers),
    not restated here, so a replay carries exactly what the full path would: the same names, values
    and order, appended after ``respond``'s headers (which never include a CORS name). They depend on
    the ``Origin`` and on whether a ``Cookie`` is sent; each pair is computed once (a bounded memo of
    plausible origins: a huge ``Origin`` is computed again each time rather than kept).
    """

    def __init__(self, config: CORSConfig | None):
        self._middleware = CORSMiddleware(app=_no_app, config=config) if config is not None else None
        self._memo: dict[tuple[bytes, bool], list[tuple[bytes, bytes]]] = {}

    async def of(self, origin: bytes | None, has_cookie: bool) -> list[tuple[bytes, bytes]]:
        if not origin or self._middleware is None:  # the middleware skips an empty Origin too
            return []
        key = (origin, has_cookie)
        headers = self._memo.get(key)
        if headers is None:
            start: Message = {"type": "http.response.start", "status": 200, "headers": []}
            await self._middleware.send_wrapper(_ignore, origin.decode("latin-1"), has_cookie)(start)
            headers = list(start["headers"])
            if len(origin) <= MAX_ORIGIN_CHARS:
                if len(self._memo) >= _MEMO_ENTRIES:
                    self._memo.clear()
                self._memo[key] = headers
        return headers


async def _no_app(scope: Scope, receive: Receive, send: Send) -> None:  # pragma: no cover - never called
    raise RuntimeError("CorsHeaders only uses the middleware's send_wrapper")


async def _ignore(message: Message) -> None:
    return None


def _cors_request(scope: Scope) -> tuple[bytes | None, bool]:
    """The request's ``Origin`` (the first, as Litestar reads it; None without one) and whether it sends a
    ``Cookie``: what the CORS middleware reads."""
    origin, has_cookie = None, False
    for name, value in scope["headers"]:
        if name == b"origin" and origin is None:
            origin = value
        elif name == b"cookie":
            has_cookie = True
    return origin, has_cookie


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
    """The outer ASGI app: refuses requests that name two hosts, replays kept answers, passes everything
    else to ``app`` (the Litestar app)."""

    def __init__(self, app: ASGIApp, service: Service, routes: tuple[Replayed, ...] = REPLAYED):
        self.app = app
        self.service = service
        self.routes = routes
        self.cors = CorsHeaders(getattr(app, "cors_config", None))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (conflict := host_conflict(scope)) is not None:
            await self._refuse(scope, receive, send, conflict)
            return
        key = replay_key(scope, self.service.settings.public_url)
        tables = self.service.store.current() if key is not None else None
        if tables is None:
            await self.app(scope, receive, send)
            return
        cors = await self.cors.of(*_cors_request(scope))
        answer = tables.bodies.get(key)
        if answer is not None and (answer.fresh is None or answer.fresh()):
            await self._reply(scope, tables, answer, cors)(scope, receive, send)
            return
        route = self._route(scope)
        if route is None or (scope["method"] == "HEAD" and route.counts_reuse is not None):
            await self.app(scope, receive, send)
            return
        head = scope["method"] == "HEAD"
        asked = {**scope, "method": "GET", "state": dict(scope.get("state", {}))} if head else scope  # own state
        capture = _Capture(send, forward=not head)
        stamp = route.stamp(self.service) if route.stamp is not None else None  # before the app reads the files
        await self.app(asked, receive, capture.send)
        kept = self._keepable(asked, capture, tables.version, route, cors)
        if kept is not None and route.stamp is not None:
            kept = Answer(kept.prepared, kept.counts_reuse, _fresh(self.service, route.stamp, stamp))
        if kept is not None:
            tables.bodies.put(key, kept)
        if head:  # the client asked for headers only: answer from what was kept, or ask again as HEAD
            if kept is not None:
                await self._reply(scope, tables, kept, cors)(scope, receive, send)
            else:
                await self.app(scope, receive, send)

    def _reply(self, scope: Scope, tables: Tables, answer: Answer, cors: Sequence[tuple[bytes, bytes]]) -> Reply:
        reply = self.service.reply(scope, tables, answer)
        if cors:
            reply._headers += cors  # a fresh list per reply (``respond``)
        return reply

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, message: str) -> None:
        """400 ``bad_request`` as the app's errors look (``api.error_handlers``), answered here: Litestar never
        sees a request whose host is ambiguous. CORS headers are added as the framework would."""
        version = self.service.store.peek_version() or NO_WAREHOUSE
        body = prepare(schemas.Error(error="bad_request", message=message))
        reply = respond(scope, body, version=version, cache_control=CACHE_ERROR, status=400)
        reply._headers += await self.cors.of(*_cors_request(scope))
        await reply(scope, receive, send)

    def _route(self, scope: Scope) -> Replayed | None:
        path = scope["path"]
        if root_path := scope.get("root_path", ""):  # as Litestar strips it before routing
            path = path.split(root_path, maxsplit=1)[-1]
        for route in self.routes:
            if route.path.fullmatch(path):
                return route
        return None

    @staticmethod
    def _keepable(scope: Scope, capture: _Capture, version: str, route: Replayed,
                  cors: Sequence[tuple[bytes, bytes]]) -> Answer | None:
        """The answer to keep, when the app's response is a complete 200 of ``version`` that a replay
        reproduces exactly (same headers as ``respond`` makes of the same body, then the same CORS
        headers); else None."""
        if capture.status != 200 or not capture.complete:
            return None
        if next((value for name, value in capture.headers if name == _WAREHOUSE), None) != version.encode():
            return None
        prepared = Prepared(b"".join(capture.chunks))
        if respond(scope, prepared, version=version)._headers + list(cors) != capture.headers:
            return None
        return Answer(prepared, counts_reuse=route.counts_reuse(prepared.body) if route.counts_reuse else False)

