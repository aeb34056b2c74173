"""``GET /v1/stats``: counts, total cost and reuses (live, so never cached)."""

from litestar import Request
from litestar.handlers import HTTPRouteHandler
from litestar.response.base import ASGIResponse

from api import schemas
from api.responses import CACHE_LIVE, prepare, respond
from api.routing import read_only
from api.service import Service


def handlers(service: Service) -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/stats", operation_id="getStats", summary="Counts, total cost, number of reuses",
        description="`reuses` counts lookups answered `evaluated` and predictions downloads; it is live.",
        body=schemas.Stats,
    )
    async def stats(request: Request) -> ASGIResponse:
        tables = service.tables(request.scope)
        body = schemas.Stats(
            datasets=len(tables.datasets), tasks=len(tables.tasks), models=tables.model_count,
            results=len(tables.results), total_cost_usd=tables.total_cost_usd, reuses=service.reuses.count,
            warehouse_version=tables.version, demo=tables.demo,
        )
        return respond(request.scope, prepare(body), version=tables.version, cache_control=CACHE_LIVE)

    return stats
