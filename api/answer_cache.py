"""Answers kept for repeats: a repeat of a hot GET is answered before the framework routes it.

Agents ask ``/v1/lookup`` before every run, mostly the same few questions. Once a handler has
answered a request (parameters validated, body encoded, ETag hashed), the same request gets the same
bytes until the next publish. Yet Litestar's routing, parameter parsing and middleware cost more
than twice the rest of such an answer (``bench.api_load`` measures both: a constant Litestar route
ran at under a third of the rate of a constant bare ASGI answer on a 2-core machine), so
``MedbenchApp.__call__`` looks the request up here first and only a miss goes through the framework.

"The same request" is deliberately narrow, so that a replay is byte-for-byte what the handler would
answer:

- GET or HEAD, to the same path with the same raw query string (a different spelling of the same
  parameters is simply another entry);
- the same Host, scheme and root path: self-links in bodies are built from them;
- no ``Origin`` header: CORS headers are the framework's, so cross-origin requests always take the
  full path;
- ``If-None-Match`` and HEAD are honoured per request by ``api.responses.respond``, as in handlers.

Only a handler stores an entry (``Service.answered``), after it has answered with 200, under the key
this module put in the scope, in the tables of the version it answered from; entries therefore live
and die with one version's ``Tables.bodies`` (bounded), and a replay never mixes versions. Keys are
bounded too: a long query string or Host is never stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from litestar.types import Scope

from api.params import MAX_CACHED_PARAMETER_CHARS
from api.responses import MAX_HOST_CHARS, Prepared

KEY_SCOPE_KEY = "medbench_answer_key"  # set before routing, read by handlers that store their answer
REPLAYABLE_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True, slots=True)
class Answer:
    """What a replay needs: the encoded body, and whether a GET of it counts as a reuse (lookups)."""

    prepared: Prepared
    counts_reuse: bool = False


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
