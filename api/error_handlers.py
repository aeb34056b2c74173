"""Error answers as docs/api.md defines them: ``{"error": code, "message": text}``, nothing else.

Litestar answers routing failures, parameter validation failures and crashes with its own bodies
(and the OpenAPI controller with HTML); the handlers here replace every one of them, so a client
only ever sees the documented codes: ``task_not_found`` and ``run_not_found`` (404),
``invalid_parameter`` (400), ``not_found`` (404, unknown path), ``method_not_allowed`` (405, with
``Allow``), ``warehouse_unavailable`` (503, nothing published yet, or nothing published can be
read: the message names the cause), ``artifact_unavailable`` (503, a predictions file on the server
is not the one published, ``api.routes.artifacts``) and ``internal_error`` (500, never a stack trace).
A CORS preflight Litestar refuses never reaches a handler (its CORS middleware answers it in plain
text), so ``JsonPreflightRefusals`` rewrites that answer.
"""

from __future__ import annotations

import logging
import re
from http import HTTPStatus
from typing import Any

from litestar import Request
from litestar.exceptions import HTTPException, MethodNotAllowedException, NotFoundException, ValidationException
from litestar.response import Response
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from api import schemas
from api.errors import VERSION_SCOPE_KEY, ApiError
from api.responses import CACHE_ERROR, NO_WAREHOUSE, AsResponse, prepare, respond
from api.service import SERVICE, service_of

log = logging.getLogger("api.errors")  # the logger 500s have always been logged under, kept for log filters

ALLOW = "GET, HEAD"
_MISSING_RE = re.compile(r"Missing required (\w+) parameter '([^']+)'")


def error_response(request: Request, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    version = request.scope.get(VERSION_SCOPE_KEY) or _current_version(request)
    asgi = respond(
        request.scope, prepare(schemas.Error(error=code, message=message)),
        version=version, cache_control=CACHE_ERROR, status=status, extra_headers=headers,
    )
    return AsResponse(asgi)


def _current_version(request: Request) -> str:
    version = service_of(request).store.peek_version() if SERVICE in request.app.dependencies else None
    return version or NO_WAREHOUSE


def _validation_message(exc: ValidationException) -> str:
    extra: Any = exc.extra
    if isinstance(extra, list) and extra:
        parts = []
        for item in extra:
            if isinstance(item, dict):
                key = item.get("key") or "?"
                source = item.get("source", "query")
                parts.append(f"{getattr(source, 'value', source)} parameter {key!r}: {item.get('message', 'invalid value')}")
        if parts:
            return "; ".join(parts)
    if missing := _MISSING_RE.search(str(exc.detail)):
        return f"missing {missing.group(1)} parameter {missing.group(2)!r}"
    return "invalid request parameters"


def handle_api_error(request: Request, exc: ApiError) -> Response:
    return error_response(request, exc.status, exc.code, exc.message, headers=exc.headers)


def handle_validation(request: Request, exc: ValidationException) -> Response:
    return error_response(request, 400, "invalid_parameter", _validation_message(exc))


JSON_PREFIXES = ("/v1", "/artifacts")  # where every error stays JSON, whatever the client accepts


def wants_page(request: Request) -> bool:
    """A browser (``Accept: text/html``) asking outside the API, on an app that serves the website."""
    path = request.scope.get("path", "")
    if any(path == p or path.startswith(p + "/") for p in JSON_PREFIXES):
        return False
    return "text/html" in request.headers.get("accept", "") and "/" in request.app.route_handler_method_map


def handle_not_found(request: Request, exc: NotFoundException) -> Response:
    path = request.scope.get("path", "")
    shown = path if len(path) <= 200 else path[:200] + "..."
    if wants_page(request) and SERVICE in request.app.dependencies:
        from api.site.routes import not_found_page

        return not_found_page(request, f"nothing at {shown}: the links above lead to the leaderboards, models and "
                              "datasets")
    return error_response(request, 404, "not_found", f"nothing at {shown}; GET /v1/openapi.json lists the routes")


WRITE_PATHS = frozenset({"/v1/submissions"})  # where a server with the write routes on also takes POST


def handle_method_not_allowed(request: Request, exc: MethodNotAllowedException) -> Response:
    if request.scope.get("path") in WRITE_PATHS and SERVICE in request.app.dependencies \
            and service_of(request).desk is not None:
        allow = ALLOW + ", POST"
        return error_response(request, 405, "method_not_allowed", f"{request.method} is not allowed here ({allow})",
                              headers={"allow": allow})
    return error_response(
        request, 405, "method_not_allowed", f"{request.method} is not allowed: this API is read-only ({ALLOW})",
        headers={"allow": ALLOW},
    )


def handle_http_exception(request: Request, exc: HTTPException) -> Response:
    status = exc.status_code
    if status >= 500:
        return handle_internal_error(request, exc)
    code = HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_") if status in HTTPStatus._value2member_map_ else "http_error"
    return error_response(request, status, code, str(exc.detail) or code)


def handle_internal_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error answering %s %s", request.method, request.scope.get("path"), exc_info=exc)
    return error_response(request, 500, "internal_error", "internal error; it has been logged")


EXCEPTION_HANDLERS: dict[type[Exception], Any] = {
    ApiError: handle_api_error,
    ValidationException: handle_validation,
    NotFoundException: handle_not_found,
    MethodNotAllowedException: handle_method_not_allowed,
    HTTPException: handle_http_exception,
    Exception: handle_internal_error,
}


class JsonPreflightRefusals:
    """Around Litestar's ASGI handler: its CORS middleware answers a preflight it refuses with a plain-text
    400, outside every exception handler. A preflight asking for a method other than GET/HEAD is asking
    whether that method is allowed, so it gets what the method itself gets (``method_not_allowed`` 405 with
    ``Allow``); one asking for a request header that is not allowed gets ``bad_request`` 400."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "OPTIONS":
            await self.app(scope, receive, send)
            return
        held: list[Message] = []

        async def rewrite(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 400:
                held.append(message)
                return
            if not held:
                await send(message)
            elif not message.get("more_body", False):
                await self._refusal(scope, b"method" in message.get("body", b""))(scope, receive, send)

        await self.app(scope, receive, rewrite)

    @staticmethod
    def _refusal(scope: Scope, method: bool) -> Any:
        request: Request = Request(scope)
        if method:
            asked = request.headers.get("access-control-request-method", "")[:40]
            return error_response(request, 405, "method_not_allowed", f"{asked} is not allowed: this API is read-only "
                                  f"({ALLOW}), from any origin", headers={"allow": ALLOW}).to_asgi_response()
        asked = request.headers.get("access-control-request-headers", "")[:200]
        return error_response(request, 400, "bad_request", f"the preflight asks for request headers ({asked}) that this "
                              "API does not accept; it accepts If-None-Match").to_asgi_response()
