"""``GET /artifacts/{run_id}/predictions.parquet``: the per-item predictions of one published run.

The run id is checked against its pattern before it is used to build a path, only runs of the
served version are answered, and the file is served only if its real path (symlinks resolved) is
inside the artifacts folder, so no request can reach any other file. The file is streamed from
``DataDir.predictions_path``; its ETag is the published ``predictions_sha256``. A completed GET
(or a 304 revalidation) counts as a reuse, a HEAD does not (see ``api.reuse``).
"""

import logging
import os

from litestar import Request
from litestar.background_tasks import BackgroundTask
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath
from litestar.response.base import ASGIResponse
from litestar.response.file import ASGIFileResponse

from api.errors import run_not_found
from api.responses import CACHE_PUBLISHED, PARQUET, WAREHOUSE_HEADER, not_modified
from api.routing import read_only
from api.service import Service
from warehouse.layout import RUN_ID_RE

log = logging.getLogger(__name__)


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/artifacts/{run_id:str}/predictions.parquet", operation_id="getPredictions",
        summary="Per-item predictions of one result",
        description="Parquet. Choice tasks: instance_id, prediction, label, correct, parse_status, raw_output. "
        "Score tasks: instance_id, score, label, caseid, subjectid, t.",
        body=bytes, media_type=PARQUET, body_description="The Parquet file",
        errors={400: "`invalid_parameter`", 404: "`run_not_found` (also for a malformed run id)"},
    )
    async def predictions(request: Request, service: NamedDependency[Service], run_id: FromPath[str]) -> ASGIResponse:
        scope = request.scope
        tables = service.tables(scope)
        data, reuses = service.settings.data, service.reuses
        if not RUN_ID_RE.match(run_id):
            raise run_not_found(run_id[:40], "not a run id (12 lowercase hex digits)")
        published = tables.results.get(run_id)
        if published is None:
            raise run_not_found(run_id)
        try:
            # resolved, so that a symlink planted in the data directory cannot lead outside the artifacts
            path = data.predictions_path(run_id).resolve(strict=True)
            stat = os.stat(path)
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop
            raise run_not_found(run_id, "its predictions file is missing from the data directory") from None
        if not path.is_relative_to(data.artifacts.resolve()):
            log.warning("refusing the predictions file of %s: it resolves outside %s", run_id, data.artifacts)
            raise run_not_found(run_id, "its predictions file is not inside the artifacts folder")
        etag = f'"{published.record.predictions_sha256}"'
        headers = {"etag": etag, "cache-control": CACHE_PUBLISHED, WAREHOUSE_HEADER: tables.version}
        is_get = scope["method"] == "GET"
        if not_modified(scope, etag):
            if is_get:
                reuses.add()
            return ASGIResponse(status_code=304, headers=headers)
        headers["content-type"] = PARQUET  # Litestar leaves it out of HEAD responses
        return ASGIFileResponse(
            file_path=path, stat_result=stat, media_type=PARQUET, filename=f"{run_id}-predictions.parquet",
            headers=headers, is_head_response=not is_get,
            background=BackgroundTask(reuses.add) if is_get else None,
        )

    return predictions
