"""uvicorn's HTTP protocol, except that a request it cannot parse is refused with a JSON error.

Some requests never reach the app: a request target with raw bytes outside ASCII (RFC 9112 allows
only ASCII there; clients must percent-encode), a malformed request line, an unknown method token,
or a request line or header block larger than the parser accepts. uvicorn answers those itself with
a ``text/plain`` 400 and closes the connection. The contract says errors are always JSON, so the
same 400 is sent with an ``Error`` body instead. Everything else is uvicorn's own code.
"""

from __future__ import annotations

import asyncio

import msgspec
from uvicorn.protocols.http.h11_impl import H11Protocol

from api import schemas

MESSAGE = (
    "the request could not be parsed as HTTP/1.1: the request target and headers must be ASCII "
    "(percent-encode anything else) and of reasonable size"
)


def unparsable_request_response(default_headers: list[tuple[bytes, bytes]]) -> bytes:
    body = msgspec.json.encode(schemas.Error(error="bad_request", message=MESSAGE))
    head = [b"HTTP/1.1 400 Bad Request"]
    head += [name + b": " + value for name, value in default_headers]
    head += [
        b"content-type: application/json",
        b"content-length: " + str(len(body)).encode(),
        b"cache-control: no-cache",
        b"connection: close",
    ]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


class _JsonBadRequest:
    transport: asyncio.Transport
    server_state: object

    def send_400_response(self, msg: str) -> None:  # uvicorn's hook for parser errors
        self.transport.write(unparsable_request_response(self.server_state.default_headers))  # type: ignore[attr-defined]
        self.transport.close()


class JsonErrorsH11(_JsonBadRequest, H11Protocol):
    pass


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools is optional for uvicorn; h11 is always there
    JsonErrorsHttpProtocol: type[asyncio.Protocol] = JsonErrorsH11
else:

    class JsonErrorsHttpTools(_JsonBadRequest, HttpToolsProtocol):
        pass

    JsonErrorsHttpProtocol = JsonErrorsHttpTools

# for `uvicorn --http api.http_protocol:JsonErrorsHttpProtocol`
__all__ = ["JsonErrorsH11", "JsonErrorsHttpProtocol", "unparsable_request_response"]
