"""``GET /healthz``: the service answers, which warehouse version it serves, and why not another.

A load balancer or a person needs the reason when nothing can be served, so the 503 names it: no
data directory, nothing published yet, a damaged pointer, or published versions that fail to load
(the log has the details; paths are not shown to the public). When the pointer's version cannot be
served and an older kept one is (``api.tables.TableStore``), the answer is still 200, but says so:
``served_from`` is ``"fallback"`` and ``warning`` names the cause, so a monitor can alert on it.
The check is the one ``/v1`` requests make (``TableStore.current``): ``/healthz`` says ok exactly
when they can be answered.
"""

from typing import Literal

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.response.base import ASGIResponse

from api import schemas
from api.errors import ApiError, VERSION_SCOPE_KEY
from api.responses import CACHE_LIVE, prepare, respond
from api.routing import read_only
from api.service import Service


class Health(schemas.Health, kw_only=True, omit_defaults=True):
    """``schemas.Health`` plus where the served version comes from (a body may gain fields: docs/api.md, "Routes")."""

    served_from: Literal["pointer", "fallback"] = "pointer"
    pointer_version: str | None = None
    warning: str | None = None


NOTHING_PUBLISHED = ("no warehouse has been published in this data directory yet: run `medbench materialize --demo` "
                     "(or `medbench demo`), then retry")


def unavailable_cause(service: Service) -> str:
    """Why nothing can be served (after ``service.store.current()`` returned None)."""
    if not service.settings.data.root.is_dir():
        return "the data directory does not exist: run `medbench materialize --demo` (or `medbench demo`), then retry"
    cause = service.store.status.cause
    return f"{cause} (the server log says more; a publish repairs it)" if cause else NOTHING_PUBLISHED


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/healthz", operation_id="health", summary="Liveness and the warehouse version served",
        description="`{\"status\": \"ok\", \"warehouse_version\": ...}` (with `served_from: \"fallback\"` and a "
        "`warning` when the pointer's version cannot be served and an older kept one is); 503 "
        "`warehouse_unavailable` with the cause when nothing can be served.",
        body=Health,
    )
    async def healthz(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.store.current()
        if tables is None:
            raise ApiError(503, "warehouse_unavailable", unavailable_cause(service))
        status = service.store.status
        request.scope[VERSION_SCOPE_KEY] = tables.version  # type: ignore[literal-required]
        report = Health(status="ok", warehouse_version=tables.version)
        if status.fallback and status.version == tables.version:
            report = Health(status="ok", warehouse_version=tables.version, served_from="fallback",
                                  pointer_version=status.pointer, warning=status.cause)
        key = ("healthz", report.served_from, report.pointer_version, report.warning)
        prepared = tables.bodies.get(key) or tables.bodies.put(key, prepare(report))
        return respond(request.scope, prepared, version=tables.version, cache_control=CACHE_LIVE)

    return healthz
