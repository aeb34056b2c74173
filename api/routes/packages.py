"""``GET /artifacts/{run_id}/package.whl``: the submitted package an official-tier result ran.

Why served: an official result is only as good as the code behind it, so the exact wheel (its
sha256 is the result's ``provenance.package_sha256``, part of its run id) can be fetched and
checked by anyone. The run id is checked before it names a path; only results with a package are
answered; the file must resolve inside the data directory's ``packages`` folder; and its sha256
is checked against the published one (cached per version and file identity) before it is served.

Its file name is shared on purpose: each route's module is named after its path (docs/api.md),
beside the module that holds what the route serves.
"""

import asyncio
import os
from stat import S_ISREG

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath
from litestar.response.base import ASGIResponse
from litestar.response.file import ASGIFileResponse

from api.errors import ApiError, run_not_found
from api.responses import CACHE_PUBLISHED, WAREHOUSE_HEADER, not_modified
from api.routes.artifacts import racy, sha256_of
from api.routing import read_only
from api.service import Service
from medbench.layout import RUN_ID_RE

WHEEL = "application/octet-stream"


def package_unavailable(run_id: str, why: str) -> ApiError:
    return ApiError(503, "artifact_unavailable", f"the package of {run_id!r} {why}; the server log has the details")


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/artifacts/{run_id:str}/package.whl", operation_id="getPackage",
        summary="The submitted package (wheel) an official result ran",
        description="The exact wheel whose sha256 is the result's `provenance.package_sha256`.",
        body=bytes, media_type=WHEEL, body_description="The wheel",
        errors={400: "`invalid_parameter`", 404: "`run_not_found` (also for a result without a package)",
                503: "`artifact_unavailable`: the kept wheel is missing or is not the one published"},
        needs_warehouse=False,
    )
    async def package(request: Request, service: NamedDependency[Service], run_id: FromPath[str]) -> ASGIResponse:
        scope = request.scope
        tables = service.tables(scope)
        data = service.settings.data
        if not RUN_ID_RE.match(run_id):
            raise run_not_found(run_id[:40], "not a run id (12 lowercase hex digits)")
        published = tables.results.get(run_id)
        if published is None:
            raise run_not_found(run_id)
        sha = published.record.provenance.package_sha256
        name = (published.record.config.get("official") or {}).get("package_file")
        if sha is None or not isinstance(name, str):
            raise run_not_found(run_id, "it was not computed from a submitted package")
        try:
            path = data.package_path(sha, name).resolve(strict=True)
            stat = os.stat(path)
            if not S_ISREG(stat.st_mode):  # a FIFO would block the hashing thread, a device never end
                raise OSError("not a regular file")
        except (OSError, RuntimeError, ValueError):
            raise package_unavailable(run_id, "is missing from the server's data directory") from None
        if not path.is_relative_to(data.packages.resolve()):
            raise run_not_found(run_id, "its package is not inside the packages folder")
        key = ("package-sha256", run_id, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        actual = tables.bodies.get(key) or await asyncio.to_thread(sha256_of, path)
        if actual != sha:
            raise package_unavailable(run_id, "on the server is not the one published (its sha256 differs)")
        if not racy(stat):
            tables.bodies.put(key, actual)
        etag = f'"{sha}"'
        headers = {"etag": etag, "cache-control": CACHE_PUBLISHED, WAREHOUSE_HEADER: tables.version}
        if not_modified(scope, etag):
            return ASGIResponse(status_code=304, headers=headers)
        headers["content-type"] = WHEEL
        return ASGIFileResponse(file_path=path, stat_result=stat, media_type=WHEEL, filename=name, headers=headers,
                                is_head_response=scope["method"] != "GET")

    return package
