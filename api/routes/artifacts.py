"""``GET /artifacts/{run_id}/predictions.parquet``: the per-item predictions of one published run.

The run id is checked against its pattern before it is used to build a path, only runs of the
served version are answered, and the file is served only if its real path (symlinks resolved) is
inside the artifacts folder, so no request can reach any other file. The file is streamed from
``DataDir.predictions_path``; its ETag is the published ``predictions_sha256``. A completed GET
(or a 304 revalidation) counts as a reuse, a HEAD does not (see ``api.reuse``).

The file on disk is not trusted to be the one published: a full disk, a copy cut short or a hand
edit may have truncated or replaced it, and serving it would hand out wrong bytes under the
published ETag and count a reuse. So its sha256 is checked against the published one before it is
served, once per (version, run, device, inode, size, mtime, ctime): a ``stat`` per request, and one
hash (in a thread) only when the file is new to this version or has changed (a file changed in the
last two seconds is hashed at each request, as its timestamps may not yet tell a change apart).
A file that does not match, or that the server cannot read, answers ``503 artifact_unavailable``
naming the cause (no path), with no ETag and no reuse counted. So does a published result whose file
is missing (not a 404: the run exists, the server lost its file), saying which command a maintainer
runs to re-materialize it.
"""

import asyncio
import hashlib
import logging
import os
import time
from stat import S_ISREG
from pathlib import Path

from litestar import Request
from litestar.background_tasks import BackgroundTask
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath
from litestar.response.base import ASGIResponse
from litestar.response.file import ASGIFileResponse

from api.errors import ApiError, run_not_found
from api.responses import CACHE_PUBLISHED, PARQUET, WAREHOUSE_HEADER, not_modified
from api.routing import read_only
from api.service import Service
from api.tables import Tables
from medbench.kinds import kinds
from medbench.files import file_kind, open_regular
from medbench.layout import RUN_ID_RE
from medbench.records import ResultRecord

log = logging.getLogger(__name__)

CHUNK = 1 << 20
RACY_NS = 2_000_000_000  # a file changed less than 2 s ago is hashed again at each request (see ``racy``)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with os.fdopen(open_regular(path), "rb") as fh:  # a FIFO planted here would block the hashing thread
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def artifact_unavailable(run_id: str, why: str) -> ApiError:
    return ApiError(503, "artifact_unavailable", f"the predictions file of {run_id!r} {why}; the server log has the details")


def artifact_missing(record: ResultRecord) -> ApiError:
    """The published result's predictions file is gone: a maintainer's repair, said as the command to run."""
    demo = " --demo" if record.demo else ""
    return ApiError(503, "artifact_unavailable",
                    f"the predictions file of {record.run_id!r} is missing from the server's data directory although "
                    f"its result is published; a maintainer should re-materialize it (medbench materialize{demo} "
                    f"--task {record.task} --model {record.model.slug} --force)")


def stat_key(run_id: str, stat: os.stat_result) -> tuple:
    """What a change to the file changes, so a cached sha256 is never reused for other bytes.

    (size, mtime) alone is not enough: a write in place that keeps the size and then puts the mtime
    back with ``os.utime`` keeps both. The ctime cannot be set from user space (``utime`` itself
    sets it to now), and (device, inode) changes when the file is replaced by a rename.
    """
    return ("predictions-sha256", run_id, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def racy(stat: os.stat_result) -> bool:
    """Whether the file changed too recently for its timestamps to tell a later change apart.

    Timestamps advance in clock ticks (milliseconds on some file systems), so a change made in the
    same tick as the one seen by ``stat`` would leave the key as it was; as git does for its index
    ("racy git"), a sha256 is only cached once the file has been left alone for ``RACY_NS``.
    """
    return time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) < RACY_NS


async def verified(tables: Tables, run_id: str, path: Path, stat: os.stat_result, published_sha256: str) -> None:
    """Raise ``artifact_unavailable`` unless the file's sha256 is the published one (cached per version)."""
    key = stat_key(run_id, stat)
    actual = tables.bodies.get(key)
    if actual is None:
        try:
            actual = await asyncio.to_thread(sha256_of, path)
            if not racy(stat):
                tables.bodies.put(key, actual)
        except OSError as exc:
            log.warning("cannot read the predictions file %s of %s: %s", path, run_id, exc)
            raise artifact_unavailable(run_id, f"cannot be read by the server ({exc.strerror or type(exc).__name__})") from None
    if actual != published_sha256:
        log.error("the predictions file %s of %s (%d bytes) has sha256 %s, but %s was published: not serving it",
                  path, run_id, stat.st_size, actual, published_sha256)
        raise artifact_unavailable(run_id, f"on the server ({stat.st_size} bytes) is not the one published "
                                           "(its sha256 differs: truncated or replaced)")


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/artifacts/{run_id:str}/predictions.parquet", operation_id="getPredictions",
        summary="Per-item predictions of one result",
        description="Parquet. " + " ".join(f"{k.name.capitalize()} tasks: {k.columns_text}." for k in kinds().values()),
        body=bytes, media_type=PARQUET, body_description="The Parquet file",
        errors={400: "`invalid_parameter`", 404: "`run_not_found` (also for a malformed run id)",
                503: "`warehouse_unavailable`: nothing can be served; `artifact_unavailable`: the file on the server "
                     "is missing, is not the one published (truncated, replaced) or cannot be read"},
        needs_warehouse=False,
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
            if not S_ISREG(stat.st_mode):
                raise artifact_unavailable(run_id, f"is {file_kind(stat.st_mode)}, not a regular file, on the server")
        except PermissionError:
            raise artifact_unavailable(run_id, "cannot be reached by the server (permission denied)") from None
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            # The result is published, so the file is the server's fault, not the client's: not a 404
            # (which says "no such run" and is cached as such), but 503 naming what a maintainer must do.
            log.warning("the predictions file %s of published run %s cannot be opened: %s",
                        data.predictions_path(run_id), run_id, exc)
            raise artifact_missing(published.record) from None
        if not path.is_relative_to(data.artifacts.resolve()):
            log.warning("refusing the predictions file of %s: it resolves outside %s", run_id, data.artifacts)
            raise run_not_found(run_id, "its predictions file is not inside the artifacts folder")
        await verified(tables, run_id, path, stat, published.record.predictions_sha256)
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
