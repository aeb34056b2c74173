"""The one way a response leaves the API: a prepared body plus the headers docs/api.md requires.

Every ``/v1`` and ``/artifacts`` answer carries ``X-Medbench-Warehouse``, a strong ``ETag`` (a hash
of the exact bytes) and ``Cache-Control``; ``If-None-Match`` turns a match into a bodiless 304; a
HEAD request gets the GET's headers (with its ``Content-Length``) and no body. Doing all of that
here, on already encoded bytes, keeps the handlers small and lets hot routes reuse cached bodies
(hash computed once) without going through Litestar's serialisation again.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import msgspec
from litestar.response import Response
from litestar.response.base import ASGIResponse
from litestar.types import Scope

JSON = "application/json"
PARQUET = "application/vnd.apache.parquet"
WAREHOUSE_HEADER = "x-medbench-warehouse"
NO_WAREHOUSE = "none"  # header value while nothing has been published
CACHE_PUBLISHED = "public, max-age=60"  # data changes only when a new version is published
CACHE_LIVE = "no-cache"  # counters and health change between publishes
CACHE_ERROR = "no-cache"

MAX_HOST_CHARS = 261  # a 253-character DNS name and ":65535"
_HOST_RE = re.compile(r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")
_ENCODER = msgspec.json.Encoder()


class Prepared:
    """Encoded body and its strong ETag, computed once and reusable across requests."""

    __slots__ = ("body", "etag", "_etag_bytes", "_length")

    def __init__(self, body: bytes):
        self.body = body
        self.etag = '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'
        self._etag_bytes = self.etag.encode()
        self._length = str(len(body)).encode()


class Reply(ASGIResponse):
    """A bare ASGI response from already encoded parts.

    Litestar's ``ASGIResponse`` rebuilds a header mapping on every call, which costs as much as the
    rest of a cached lookup; the hot routes answer with this instead. A fresh header list per reply
    matters: the CORS middleware appends to it.
    """

    __slots__ = ("_status", "_headers", "_body")

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes = b""):
        self._status = status
        self._headers = headers
        self._body = body

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": self._status, "headers": self._headers})
        await send({"type": "http.response.body", "body": self._body, "more_body": False})


def prepare(value: Any) -> Prepared:
    return Prepared(_ENCODER.encode(value))


def header(scope: Scope, name: bytes) -> str | None:
    """One request header (``name`` in lower case) straight from the scope: cheaper than Request.headers."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 If-None-Match: weak comparison against any listed tag, or ``*``."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == etag:
            return True
    return False


TARGET_SCOPE_KEY = "medbench_request_target"  # an absolute-form request target, left by the HTTP protocol
_SHOWN = 80  # characters of a refused host quoted back in the error message


def host_conflict(scope: Scope) -> str | None:
    """Why the request does not name one host, or None: two ``Host`` headers, or a ``Host`` that is not
    the authority of an absolute-form target (``GET http://a.example/v1/... HTTP/1.1``).

    Self-links are built from the Host (``request_origin``) and the answer cache keys on the same
    origin; a front cache or proxy may pick the other of two hosts, and would then hand one client's
    links to every later client. So such a request is refused (400) before anything answers it.
    uvicorn's httptools protocol keeps only the path of an absolute-form target: ``api.server`` has it
    leave the whole target in the scope (``TARGET_SCOPE_KEY``); under h11 it is the raw path itself.
    """
    host: bytes | None = None
    for name, value in scope["headers"]:
        if name == b"host":
            if host is not None:
                return "the request has more than one Host header; send exactly one"
            host = value
    target = scope.get(TARGET_SCOPE_KEY)
    if target is None:
        raw = scope.get("raw_path", b"/")
        target = raw if raw[:1] != b"/" else None
    if target is None or b"://" not in target:
        return None
    authority = target.split(b"://", 1)[1].split(b"/", 1)[0].split(b"?", 1)[0].rpartition(b"@")[2]
    if host is not None and host.lower() == authority.lower():
        return None
    named = authority.decode("latin-1")[:_SHOWN]
    said = f"says {host.decode('latin-1')[:_SHOWN]!r}" if host is not None else "is missing"
    return f"the request target names host {named!r} but the Host header {said}; send the same host in both"


_ORIGINS: dict[tuple, str] = {}  # (scheme, Host, root path, server address) -> origin: a hot path of every replay
_ORIGIN_ENTRIES = 1024


def request_origin(scope: Scope) -> str:
    """``scheme://host[:port]`` the request came to (plus any ASGI root path), for self-links.

    The request's one Host (``host_conflict`` has refused any other), when it is a plausible host;
    else the address the server listens on."""
    host: bytes | None = None
    for name, value in scope["headers"]:
        if name == b"host":
            host = value
            break
    key = (scope.get("scheme", "http"), host, scope.get("root_path", ""), scope.get("server"))
    origin = _ORIGINS.get(key)
    if origin is None:
        origin = _origin(key)
        # bounded: the origin ends up in cached bodies, so a huge Host header must not be kept or multiplied
        if host is None or len(host) <= MAX_HOST_CHARS:
            if len(_ORIGINS) >= _ORIGIN_ENTRIES:
                _ORIGINS.clear()
            _ORIGINS[key] = origin
    return origin


def _origin(key: tuple) -> str:
    scheme, raw, root_path, server = key
    host = raw.decode("latin-1") if raw is not None else None
    if not host or len(host) > MAX_HOST_CHARS or not _HOST_RE.match(host):
        host = f"{server[0]}:{server[1]}" if server else "localhost"
    return f"{scheme}://{host}{root_path}".rstrip("/")


def link_origin(scope: Scope, public_url: str | None) -> str:
    """The origin of every self-link in an answer (``MEDBENCH_PUBLIC_URL``, else where the request came
    to): the one decision both the links (``Service.base_url``) and the answer cache's key use, so that a
    kept answer is only ever replayed to requests whose links it already holds."""
    return public_url or request_origin(scope)


def respond(
    scope: Scope,
    prepared: Prepared,
    *,
    version: str,
    cache_control: str = CACHE_PUBLISHED,
    status: int = 200,
    media_type: str = JSON,
    extra_headers: dict[str, str] | None = None,
) -> Reply:
    headers = [
        (b"etag", prepared._etag_bytes),
        (b"cache-control", cache_control.encode()),
        (WAREHOUSE_HEADER.encode(), version.encode()),
    ]
    if extra_headers:
        headers += [(name.encode("latin-1"), value.encode("latin-1")) for name, value in extra_headers.items()]
    if status == 200 and etag_matches(header(scope, b"if-none-match"), prepared.etag):
        return Reply(304, headers)
    headers.append((b"content-type", media_type.encode()))
    headers.append((b"content-length", prepared._length))
    if scope["method"] == "HEAD":
        return Reply(status, headers)
    return Reply(status, headers, prepared.body)


def not_modified(scope: Scope, etag: str) -> bool:
    return etag_matches(header(scope, b"if-none-match"), etag)


class AsResponse(Response):
    """Hands a ready ASGIResponse to layers that insist on a Response (exception handlers)."""

    __slots__ = ("_asgi",)

    def __init__(self, asgi: ASGIResponse):
        super().__init__(content=None)
        self._asgi = asgi

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> ASGIResponse:  # type: ignore[override]
        return self._asgi
