"""uvicorn's HTTP protocol with the limits one client needs to be unable to take the server down.

uvicorn (0.54, httptools parser) has no header-size limit, no timeout for a request that never
finishes, none for a fresh connection that never sends anything, and its ``limit_concurrency``
answers a plain-text 503 only once a request has been parsed. Measured before this module: one
20 MB header was answered 200; 100 connections each holding 10 MB of an unfinished header took the
process from 149 MB to 1.21 GB; 1,100 half-open sockets under a 1,024-descriptor limit made every
new client fail, with nothing logged. So this subclass adds, per connection (values in ``Limits``,
documented in the README's serving section):

- a request line over ``max_request_line`` bytes: ``400 bad_request``; header fields over
  ``max_header_bytes`` bytes: ``431 headers_too_large`` (JSON, then close). Bytes are counted as they
  arrive, before the parser buffers them, so memory per connection stays bounded by the limit plus
  one read (at most 256 KiB);
- a request whose head is not complete ``header_timeout_s`` after its first byte (or after the
  connection opened) is closed (slowloris), and a body not complete ``body_timeout_s`` after its
  head; an idle keep-alive connection is closed after uvicorn's ``timeout_keep_alive``;
- a request body over ``max_body_bytes`` (1 MiB, nginx's default): ``413 payload_too_large``, from its
  Content-Length before any of it is read, or as a chunked body streams past the limit; except for
  ``PUT /v1/submissions/{id}/package``, whose limit is the package limit (``max_package_bytes``, 100
  MiB) and its timeout ``package_body_timeout_s``, its handler enforcing it again as it writes;
- beyond ``max_connections`` open connections, or ``max_connections_per_client`` from one peer address,
  a new one is answered ``503 server_busy`` (JSON) and closed instead of being held.
Descriptors must never run out: under uvloop, libuv's answer to ``accept()`` failing with EMFILE is to
accept and close at once every connection waiting in the backlog (its reserve-descriptor trick), so
every client then sees a reset, with nothing logged. Refused connections hold descriptors too (while
they wait for their request and drain), so past ``fd_ceiling`` (the open-file limit less
``FD_HEADROOM``), and for a client over its own limit, a refusal answers as soon as the request is in
and closes at once.
Refusals and timeouts are logged, at most one line per kind every ``LOG_EVERY_S`` seconds.

Requests the parser cannot parse (raw bytes outside ASCII, a malformed request line, an unknown
method token) get uvicorn's 400, but with a JSON ``Error`` body: the contract says errors are JSON.

The limits need the httptools parser (a declared dependency). Without it uvicorn falls back to h11,
which has its own 16 KiB head limit (answered 400 here) but none of the timeouts or the cap.
"""

from __future__ import annotations

import asyncio
import functools
import http
import logging
import os
import re
import resource
import time
from dataclasses import dataclass

import msgspec
from uvicorn.protocols.http.h11_impl import H11Protocol

from api import schemas
from medbench.packages import max_package_bytes

log = logging.getLogger("medbench.http")
PACKAGE_ROUTE = re.compile(rb"/v1/submissions/[^/?#]+/package(?:[?#].*)?")

MESSAGE = (
    "the request could not be parsed as HTTP/1.1: the request target and headers must be ASCII "
    "(percent-encode anything else) and of reasonable size"
)
LOG_EVERY_S = 10.0
BUSY_WAIT_S = 2.0  # how long a refused connection may take to send its request before the 503 is sent
DRAIN_S = 2.0  # after a refusal, what the client still sends is read and dropped for this long (or
DRAIN_BYTES = 4 * 1024 * 1024  # this much), so that closing does not reset the connection before it reads the answer
FAST_WAIT_S = 0.25  # the same wait for a refusal under descriptor pressure, which then closes at once
FD_RESERVE = 128  # descriptors kept for the warehouse, logs, the state store and refused connections
FD_HEADROOM = 48  # past the open-file limit less this, refusals close at once (libuv's accept burst fits)
MAX_CONNECTIONS_ENV = "MEDBENCH_MAX_CONNECTIONS"
PER_CLIENT_ENV = "MEDBENCH_MAX_CONNECTIONS_PER_CLIENT"


@dataclass(frozen=True)
class Limits:
    max_request_line: int = 64 * 1024
    max_header_bytes: int = 64 * 1024
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_connections: int = 4096
    max_connections_per_client: int = 256  # 0: no per-client limit (behind a proxy every client is the proxy)
    max_body_bytes: int = 1024 * 1024
    package_body_timeout_s: float = 600.0  # 100 MiB at 200 KB/s
    fd_ceiling: int | None = None  # open connections (refused ones too) past which refusals close at once


def _soft_fd_limit() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def default_max_connections() -> int:
    """4,096 per process, less where the open-file limit would be reached first."""
    soft = _soft_fd_limit()
    return Limits.max_connections if soft is None else max(16, min(Limits.max_connections, soft - FD_RESERVE))


def _env_count(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw.isdigit() else None


def raise_open_file_limit() -> int:
    """Raise the soft descriptor limit to the hard one (workers inherit it); returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


@functools.cache
def current_limits() -> Limits:
    """The limits of this process; ``MEDBENCH_MAX_CONNECTIONS`` and ``MEDBENCH_MAX_CONNECTIONS_PER_CLIENT``
    (set by ``medbench serve``) reach every worker process, which is why the caps travel in the environment."""
    cap = _env_count(MAX_CONNECTIONS_ENV) or default_max_connections()
    per_client = _env_count(PER_CLIENT_ENV)
    soft = _soft_fd_limit()
    return Limits(max_connections=cap,
                  max_connections_per_client=Limits.max_connections_per_client if per_client is None else per_client,
                  fd_ceiling=None if soft is None else max(16, soft - FD_HEADROOM))


def error_response(status: int, code: str, message: str, default_headers: list[tuple[bytes, bytes]]) -> bytes:
    """A complete JSON error response that closes the connection, for answers sent outside the app."""
    body = msgspec.json.encode(schemas.Error(error=code, message=message))
    head = [f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}".encode()]
    head += [name + b": " + value for name, value in default_headers]
    head += [
        b"content-type: application/json",
        b"content-length: " + str(len(body)).encode(),
        b"cache-control: no-cache",
        b"connection: close",
    ]
    if status == 503:
        head.append(b"retry-after: 1")
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def unparsable_request_response(default_headers: list[tuple[bytes, bytes]]) -> bytes:
    return error_response(400, "bad_request", MESSAGE, default_headers)


class Throttled:
    """Counts events per kind and logs one warning per kind at most every ``every_s`` seconds."""

    def __init__(self, every_s: float = LOG_EVERY_S):
        self.every_s = every_s
        self._counts: dict[str, int] = {}
        self._last: dict[str, float] = {}

    def note(self, kind: str, text: str) -> None:
        self._counts[kind] = self._counts.get(kind, 0) + 1
        now = time.monotonic()
        if now - self._last.get(kind, -self.every_s) >= self.every_s:
            count, self._counts[kind], self._last[kind] = self._counts[kind], 0, now
            log.warning("%s (%d since the last such line)", text, count)


EVENTS = Throttled()
PEERS: dict[str | None, int] = {}  # open connections per peer address, in this process


class _ThrottleParserWarnings(logging.Filter):
    """uvicorn logs "Invalid HTTP request received." once per bad request: one client sending garbage
    in a loop would flood the log. Let one such line through every ``LOG_EVERY_S`` seconds."""

    def __init__(self) -> None:
        super().__init__()
        self._last = -LOG_EVERY_S
        self._dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != "Invalid HTTP request received.":
            return True
        now = time.monotonic()
        if now - self._last < LOG_EVERY_S:
            self._dropped += 1
            return False
        if self._dropped:
            record.msg = f"Invalid HTTP request received. ({self._dropped} more since the last such line)"
        self._last, self._dropped = now, 0
        return True


logging.getLogger("uvicorn.error").addFilter(_ThrottleParserWarnings())


class _JsonBadRequest:
    transport: asyncio.Transport
    server_state: object

    def send_400_response(self, msg: str) -> None:  # uvicorn's hook for parser errors
        self.transport.write(unparsable_request_response(self.server_state.default_headers))  # type: ignore[attr-defined]
        self.transport.close()


class JsonErrorsH11(_JsonBadRequest, H11Protocol):
    pass


class _Guarded(_JsonBadRequest):
    """The limits, around httptools' parser callbacks (``on_headers_complete``, ``on_message_complete``)."""

    loop: asyncio.AbstractEventLoop
    connections: set

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)  # type: ignore[misc]
        self._limits = limits = current_limits()
        self._timer: asyncio.TimerHandle | None = None
        self._peer = peer = self.client[0] if self.client else None  # type: ignore[attr-defined]
        PEERS[peer] = from_peer = PEERS.get(peer, 0) + 1
        open_now = len(self.connections)
        per_client = limits.max_connections_per_client
        # None: served; else the refusal's (message, log kind, log line, close at once)
        self._busy: tuple[str, str, str, bool] | None = None
        if per_client and peer is not None and from_peer > per_client:
            self._busy = (f"this client has reached the per-client limit of {per_client} open connections; close "
                          "some and retry", "client_busy",
                          f"per-client connection limit {per_client} reached: answered 503 server_busy", True)
        elif open_now > limits.max_connections or (limits.fd_ceiling is not None and open_now > limits.fd_ceiling):
            cap = limits.max_connections
            self._busy = (f"the server holds its maximum of {cap} connections; retry shortly", "server_busy",
                          f"connection cap {cap} reached: answered 503 server_busy",
                          limits.fd_ceiling is not None and open_now > limits.fd_ceiling)
        self._drained: int | None = None  # bytes dropped since a refusal; None before one
        self._body_bytes = 0
        self._new_head()
        if self._busy:
            self._timer = self.loop.call_later(FAST_WAIT_S if self._busy[3] else BUSY_WAIT_S, self._refuse_busy)
        else:
            self._arm(limits.header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if (left := PEERS.pop(self._peer, 1) - 1) > 0:
            PEERS[self._peer] = left
        super().connection_lost(exc)  # type: ignore[misc]

    def data_received(self, data: bytes) -> None:
        if self._drained is not None:
            self._drained += len(data)
            if self._drained > DRAIN_BYTES:
                self.transport.close()
            return
        if self._busy:
            self._refuse_busy()
            return
        if self.transport.is_closing():
            return
        if self._in_head:
            if self._timer is None:  # the first byte of the next request on a kept-alive connection
                self._arm(self._limits.header_timeout_s)
            self._count_head(data)
        super().data_received(data)  # type: ignore[misc]
        if self._drained is not None or self.transport.is_closing():
            return
        if self._in_head:
            self._check_head(self._line_bytes, self._field_bytes)  # still no complete head: its size so far
        elif self._body_pending and self._timer is None:  # a head whose body is still to come
            self._arm(self._body_timeout)

    def on_headers_complete(self) -> None:
        self._in_head = False
        # the exact size, for a head that arrived within one read
        fields = sum(len(name) + len(value) + 4 for name, value in self.headers)  # type: ignore[attr-defined]
        if self._check_head(len(self.url), fields):  # type: ignore[attr-defined]
            return
        if PACKAGE_ROUTE.fullmatch(self.url) and self.parser.get_method() == b"PUT":  # type: ignore[attr-defined]
            self._body_limit, self._body_timeout = max_package_bytes(), self._limits.package_body_timeout_s
        length = next((value for name, value in self.headers if name == b"content-length"), b"0")  # type: ignore[attr-defined]
        if length.isdigit() and int(length) > self._body_limit:  # refused before any of it is read
            self._refuse_body()
            return
        self._disarm()
        self._body_pending = True  # until on_message_complete, usually in the same read (a GET)
        self._body_bytes = 0
        super().on_headers_complete()  # type: ignore[misc]

    def on_body(self, body: bytes) -> None:
        if self._drained is not None:
            return
        self._body_bytes += len(body)
        cycle = self.cycle  # type: ignore[attr-defined]
        if self._body_bytes > self._body_limit and not cycle.response_started:  # a chunked body
            cycle.disconnected = True  # the app reads a disconnect, and what it sends is dropped
            cycle.message_event.set()
            self._refuse_body()
            return
        super().on_body(body)  # type: ignore[misc]

    def on_message_complete(self) -> None:
        if self._drained is not None:
            return
        self._disarm()
        self._new_head()
        super().on_message_complete()  # type: ignore[misc]

    def send_400_response(self, msg: str) -> None:  # uvicorn's hook for parser errors (it has logged them)
        self._refuse(400, "bad_request", MESSAGE, "bad_request", "refused an unparsable request (400)")

    # ---- helpers ----
    def _check_head(self, line_bytes: int, field_bytes: int) -> bool:
        """Refuse a head over the limits; True when refused."""
        limits = self._limits
        if line_bytes > limits.max_request_line:
            self._refuse(400, "bad_request", f"the request line is longer than {limits.max_request_line} bytes",
                         "request_line_too_long", "refused a request line over the limit (400)")
        elif field_bytes > limits.max_header_bytes:
            self._refuse(431, "headers_too_large", f"the header block is larger than {limits.max_header_bytes} bytes",
                         "headers_too_large", "refused a header block over the limit (431)")
        else:
            return False
        return True

    def _new_head(self) -> None:
        self._body_limit, self._body_timeout = self._limits.max_body_bytes, self._limits.body_timeout_s
        self._in_head = True
        self._body_pending = False
        self._line_done = False
        self._line_bytes = 0
        self._field_bytes = 0

    def _count_head(self, data: bytes) -> None:
        if self._line_done:
            self._field_bytes += len(data)
            return
        newline = data.find(b"\n")
        if newline < 0:
            self._line_bytes += len(data)
        else:
            self._line_done = True
            self._line_bytes += newline
            self._field_bytes += len(data) - newline - 1

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        what = "head" if self._in_head else "body"
        limit = self._limits.header_timeout_s if self._in_head else self._body_timeout
        EVENTS.note(f"slow_{what}", f"closed a connection whose request {what} was not complete after {limit:g} s")
        self.transport.close()

    def _refuse(self, status: int, code: str, message: str, kind: str, text: str, at_once: bool = False) -> None:
        """Answer, then half-close and drop what still arrives for a moment: closing at once with unread
        bytes would make the kernel reset the connection, and the client might never read the answer.
        ``at_once`` (short of descriptors) closes straight away: the request, if sent, has been read."""
        self._disarm()
        EVENTS.note(kind, text)
        self.transport.write(error_response(status, code, message, self.server_state.default_headers))  # type: ignore[attr-defined]
        if at_once or not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self._drained = 0
        self._timer = self.loop.call_later(DRAIN_S, self.transport.close)

    def _refuse_busy(self) -> None:
        self._timer = None
        if self._busy and not self.transport.is_closing() and self._drained is None:
            message, kind, text, at_once = self._busy
            self._refuse(503, "server_busy", message, kind, text, at_once=at_once)

    def _refuse_body(self) -> None:
        limit = self._body_limit
        self._refuse(413, "payload_too_large", f"the request body is larger than {limit} bytes; send less",
                     "payload_too_large", "refused a request body over the limit (413)")


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # not expected: httptools is a declared dependency
    JsonErrorsHttpProtocol: type[asyncio.Protocol] = JsonErrorsH11
    LIMITED = False
else:

    class JsonErrorsHttpTools(_Guarded, HttpToolsProtocol):
        pass

    JsonErrorsHttpProtocol = JsonErrorsHttpTools
    LIMITED = True

# for `uvicorn --http api.http_protocol:JsonErrorsHttpProtocol`
__all__ = ["JsonErrorsH11", "JsonErrorsHttpProtocol", "Limits", "current_limits", "error_response",
           "unparsable_request_response"]
