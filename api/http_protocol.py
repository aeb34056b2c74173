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
- beyond ``max_connections`` open connections, a new one is answered ``503 server_busy`` (JSON) and
  closed instead of being held, so descriptors are never exhausted by idle clients.
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
import resource
import time
from dataclasses import dataclass

import msgspec
from uvicorn.protocols.http.h11_impl import H11Protocol

from api import schemas

log = logging.getLogger("medbench.http")

MESSAGE = (
    "the request could not be parsed as HTTP/1.1: the request target and headers must be ASCII "
    "(percent-encode anything else) and of reasonable size"
)
LOG_EVERY_S = 10.0
BUSY_WAIT_S = 2.0  # how long a refused connection may take to send its request before the 503 is sent
DRAIN_S = 2.0  # after a refusal, what the client still sends is read and dropped for this long (or
DRAIN_BYTES = 4 * 1024 * 1024  # this much), so that closing does not reset the connection before it reads the answer
FD_RESERVE = 128  # descriptors kept for the warehouse, logs, the state store and refused connections
MAX_CONNECTIONS_ENV = "MEDBENCH_MAX_CONNECTIONS"


@dataclass(frozen=True)
class Limits:
    max_request_line: int = 64 * 1024
    max_header_bytes: int = 64 * 1024
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_connections: int = 4096


def default_max_connections() -> int:
    """4,096 per process, less where the open-file limit would be reached first."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return Limits.max_connections
    return max(16, min(Limits.max_connections, soft - FD_RESERVE))


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
    """The limits of this process; ``MEDBENCH_MAX_CONNECTIONS`` (set by ``medbench serve``) reaches
    every worker process, which is why the cap travels in the environment."""
    raw = os.environ.get(MAX_CONNECTIONS_ENV, "").strip()
    cap = int(raw) if raw.isdigit() and int(raw) > 0 else default_max_connections()
    return Limits(max_connections=cap)


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
        self._busy = len(self.connections) > limits.max_connections
        self._drained: int | None = None  # bytes dropped since a refusal; None before one
        self._new_head()
        if self._busy:
            self._timer = self.loop.call_later(BUSY_WAIT_S, self._refuse_busy)
        else:
            self._arm(limits.header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
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
            self._arm(self._limits.body_timeout_s)

    def on_headers_complete(self) -> None:
        self._in_head = False
        # the exact size, for a head that arrived within one read
        fields = sum(len(name) + len(value) + 4 for name, value in self.headers)  # type: ignore[attr-defined]
        if self._check_head(len(self.url), fields):  # type: ignore[attr-defined]
            return
        self._disarm()
        self._body_pending = True  # until on_message_complete, usually in the same read (a GET)
        super().on_headers_complete()  # type: ignore[misc]

    def on_body(self, body: bytes) -> None:
        if self._drained is None:
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
        limit = self._limits.header_timeout_s if self._in_head else self._limits.body_timeout_s
        EVENTS.note(f"slow_{what}", f"closed a connection whose request {what} was not complete after {limit:g} s")
        self.transport.close()

    def _refuse(self, status: int, code: str, message: str, kind: str, text: str) -> None:
        """Answer, then half-close and drop what still arrives for a moment: closing at once with unread
        bytes would make the kernel reset the connection, and the client might never read the answer."""
        self._disarm()
        EVENTS.note(kind, text)
        self.transport.write(error_response(status, code, message, self.server_state.default_headers))  # type: ignore[attr-defined]
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self._drained = 0
        self._timer = self.loop.call_later(DRAIN_S, self.transport.close)

    def _refuse_busy(self) -> None:
        self._timer = None
        if not self.transport.is_closing() and self._drained is None:
            cap = self._limits.max_connections
            self._refuse(503, "server_busy", f"the server holds its maximum of {cap} connections; retry shortly",
                         "server_busy", f"connection cap {cap} reached: answered 503 server_busy")


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
