"""``GET /v1/stats``: counts, total cost and reuses (live, so never cached)."""

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.response.base import ASGIResponse

from api import render, schemas
from api.responses import CACHE_LIVE, prepare, respond
from api.routing import read_only
from api.service import Service


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/stats", operation_id="getStats", summary="Counts, total cost, number of reuses",
        description="`reuses` counts lookups answered `evaluated` and predictions downloads; it is live.",
        body=schemas.Stats,
    )
    async def stats(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.tables(request.scope)
        body = render.stats(tables, service.reuses.count)
        return respond(request.scope, prepare(body), version=tables.version, cache_control=CACHE_LIVE)

    return stats
