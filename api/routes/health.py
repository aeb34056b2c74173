"""``GET /healthz``: the service answers and which warehouse version it serves (503 before any)."""

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.response.base import ASGIResponse

from api import schemas
from api.responses import CACHE_LIVE, prepare, respond
from api.routing import read_only
from api.service import Service


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/healthz", operation_id="health", summary="Liveness and the warehouse version served",
        description="`{\"status\": \"ok\", \"warehouse_version\": ...}`; 503 `warehouse_unavailable` before the first publish.",
        body=schemas.Health,
    )
    async def healthz(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.tables(request.scope)
        key = ("healthz",)
        prepared = tables.bodies.get(key) or tables.bodies.put(
            key, prepare(schemas.Health(status="ok", warehouse_version=tables.version))
        )
        return respond(request.scope, prepared, version=tables.version, cache_control=CACHE_LIVE)

    return healthz
