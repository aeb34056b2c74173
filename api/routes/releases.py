"""``GET /v1/releases`` (newest first, paginated) and ``GET /v1/releases/{id}`` (manifest and BibTeX).

Every publish that changed content is a release, kept for ever in the release log beside the
warehouse (``warehouse.releases``); the answers come from that log, through ``api.release_views``.

Its file name is shared on purpose: each route's module is named after its path (docs/api.md),
beside the module that holds what the route serves.
"""

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath
from litestar.response.base import ASGIResponse

from api import release_views, schemas
from api.params import limit_parameter, offset_parameter
from api.responses import respond
from api.routes.log import require_verified_log
from api.routing import read_only
from api.service import Service


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/releases", operation_id="listReleases", summary="Every release, newest first",
        description="Each publish that changed content is a release, kept for ever: its id (the warehouse version "
        "it was published as), time, number of results, tasks, the sha256 of its manifest and the release before it.",
        body=schemas.ReleasePage,
        errors={400: "`invalid_parameter`", 503: "`log_unavailable`: the transparency log does not verify"},
    )
    async def releases(request: Request, service: NamedDependency[Service], limit: int = limit_parameter(),
                       offset: int = offset_parameter()) -> ASGIResponse:
        tables = service.tables(request.scope)
        require_verified_log(service)
        prepared = release_views.listing(tables, service.settings.data, limit, offset, service.base_url(request.scope))
        return respond(request.scope, prepared, version=tables.version)

    @read_only(
        "/v1/releases/{id:str}", operation_id="getRelease", summary="One release, its manifest and BibTeX",
        description="The manifest lists every result with its `predictions_sha256` and status, and each task's "
        "leaderboard rows as they stood; `manifest_sha256` is the sha256 of its canonical JSON (keys sorted, no "
        "whitespace). `?release=<id>` on the leaderboard, results, result and lookup routes answers as of it.",
        body=schemas.Release,
        errors={400: "`invalid_parameter`", 404: "`release_not_found`",
                503: "`log_unavailable`: the transparency log does not verify"},
    )
    async def release(request: Request, service: NamedDependency[Service],
                      id: FromPath[str]) -> ASGIResponse:  # noqa: A002 (the route's {id}, docs/api.md)
        tables = service.tables(request.scope)
        require_verified_log(service)
        prepared = release_views.detail(tables, service.settings.data, id, service.base_url(request.scope))
        return respond(request.scope, prepared, version=tables.version)

    return [*releases, *release]
