"""``GET /healthz``: the service answers and which warehouse version it serves.

A load balancer or a person needs the reason when nothing can be served, so the 503 names it:
no data directory, nothing published yet, or a published version that fails to load (the log has
the details; paths are not shown to the public).
"""

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.response.base import ASGIResponse

from api import schemas
from api.errors import ApiError, VERSION_SCOPE_KEY
from api.responses import CACHE_LIVE, prepare, respond
from api.routing import read_only
from api.service import Service


def unavailable_cause(service: Service) -> str:
    from warehouse.publish import current_version

    data = service.settings.data
    if not data.root.is_dir():
        return "the data directory does not exist: run `medbench materialize --demo` (or `medbench demo`), then retry"
    try:
        version = current_version(data)
    except OSError as exc:
        return f"the warehouse pointer cannot be read ({exc.strerror or type(exc).__name__}); see the server log"
    if version is None:
        return ("no warehouse has been published in this data directory yet: run `medbench materialize --demo` "
                "(or `medbench demo`), then retry")
    return f"warehouse version {version} is published but could not be loaded (the server log says why; retrying)"


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/healthz", operation_id="health", summary="Liveness and the warehouse version served",
        description="`{\"status\": \"ok\", \"warehouse_version\": ...}`; 503 `warehouse_unavailable` before the first publish.",
        body=schemas.Health,
    )
    async def healthz(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.store.current()
        if tables is None:
            raise ApiError(503, "warehouse_unavailable", unavailable_cause(service))
        request.scope[VERSION_SCOPE_KEY] = tables.version  # type: ignore[literal-required]
        key = ("healthz",)
        prepared = tables.bodies.get(key) or tables.bodies.put(
            key, prepare(schemas.Health(status="ok", warehouse_version=tables.version))
        )
        return respond(request.scope, prepared, version=tables.version, cache_control=CACHE_LIVE)

    return healthz
