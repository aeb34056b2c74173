"""Read-only routes: one decorator gives a resource its GET, its HEAD and its refusal of OPTIONS.

Litestar's ``@get`` answers only GET, and its ``@head`` refuses handlers that return a body. The
contract wants HEAD for every GET (same headers, no body: ``api.responses.respond`` drops the body)
and 405 for every other method, OPTIONS included (CORS preflights are answered earlier, by the CORS
middleware). Only the GET is documented in OpenAPI. The OPTIONS handler must be registered first
(Litestar adds its own to a path registered without one). GET and HEAD both refuse a declared
query parameter given twice or not UTF-8 before the handler runs (``api.params.query_guard``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

from litestar import get, route
from litestar.enums import HttpMethod
from litestar.exceptions import MethodNotAllowedException
from litestar.handlers import HTTPRouteHandler
from litestar.openapi import ResponseSpec

from api import schemas
from api.params import query_guard
from api.service import SERVICE

_PATH_PARAM_RE = re.compile(r"{(\w+)(?::\w+)?}")


async def _refuse_options() -> None:
    raise MethodNotAllowedException()


def error_specs(descriptions: Mapping[int, str]) -> dict[int, ResponseSpec]:
    return {
        status: ResponseSpec(data_container=schemas.Error, description=text, generate_examples=False)
        for status, text in descriptions.items()
    }


def read_only(
    path: str,
    *,
    operation_id: str,
    summary: str,
    description: str,
    body: Any,
    errors: Mapping[int, str] | None = None,
    media_type: str = "application/json",
    body_description: str = "OK",
    needs_warehouse: bool = True,
) -> Callable[[Callable[..., Any]], list[HTTPRouteHandler]]:
    unavailable = {503: "`warehouse_unavailable`: nothing has been published yet"} if needs_warehouse else {}
    if errors and 503 in errors and unavailable:  # a route's own 503 (e.g. `log_unavailable`) is listed too
        unavailable = {503: f"{unavailable[503]}; {errors[503]}"}
    responses = {
        200: ResponseSpec(data_container=body, description=body_description, media_type=media_type, generate_examples=False),
        **error_specs({**(errors or {}), **unavailable}),
    }

    def decorate(fn: Callable[..., Any]) -> list[HTTPRouteHandler]:
        declared = _query_parameters(path, fn)
        guard = query_guard(declared) if declared else None
        return [  # OPTIONS first: a path registered without one gets Litestar's automatic OPTIONS handler
            route(path, http_method=[HttpMethod.OPTIONS], include_in_schema=False)(_refuse_options),
            get(path, operation_id=operation_id, summary=summary, description=description, responses=responses,
                before_request=guard)(fn),
            route(path, http_method=[HttpMethod.HEAD], include_in_schema=False, before_request=guard)(fn),
        ]

    return decorate


def _query_parameters(path: str, fn: Callable[..., Any]) -> set[str]:
    """The handler's parameters that come from the query string (all but ``request``, the injected
    ``service`` and path parameters)."""
    return set(inspect.signature(fn).parameters) - {"request", SERVICE, *_PATH_PARAM_RE.findall(path)}
