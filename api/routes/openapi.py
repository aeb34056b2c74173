"""``GET /v1/openapi.json``: the machine-readable contract (available even before a publish).

Its file name is shared on purpose: each route's module is named after its path (docs/api.md),
beside the module that holds what the route serves.
"""

from collections.abc import Callable
from typing import Any

from litestar import Request, Router
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.response.base import ASGIResponse

from api.openapi import build_document
from api.responses import NO_WAREHOUSE, prepare, respond
from api.routing import read_only
from api.service import Service, dependencies


def handlers(routes: Callable[[], Router]) -> list[HTTPRouteHandler]:
    """The route, documenting what ``routes`` builds: a fresh set of every route's handlers, this one
    included. ``api.routes.api_router`` hands itself in; this module, one of the routes it gathers,
    does not import it."""

    @read_only(
        "/v1/openapi.json", operation_id="getOpenAPI", summary="This document",
        description="OpenAPI 3.1 document of every route.", body=dict[str, Any], needs_warehouse=False,
    )
    async def openapi(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        if service.openapi is None:
            service.openapi = prepare(build_document(routes(), dependencies(service)))
        tables = service.store.current()
        version = tables.version if tables is not None else NO_WAREHOUSE
        return respond(request.scope, service.openapi, version=version)

    return openapi
