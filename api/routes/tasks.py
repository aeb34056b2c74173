"""``GET /v1/tasks`` (one item per task version) and ``GET /v1/tasks/{slug}`` (with the full spec)."""

from typing import Annotated, Optional

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import Parameter
from litestar.response.base import ASGIResponse

from api import render, schemas
from api.errors import ApiError, task_not_found
from api.params import TASK_REF_PATTERN, parse_task_ref
from api.responses import prepare, respond
from api.routing import read_only
from api.service import Service


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/tasks", operation_id="listTasks", summary="Tasks",
        description="One item per task version: dataset, kind, primary metric, preview flag, number of results.",
        body=schemas.TaskList,
    )
    async def tasks(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.tables(request.scope)
        key = ("tasks",)
        prepared = tables.bodies.get(key) or tables.bodies.put(
            key, prepare(schemas.TaskList(tasks=[render.task(t) for t in tables.tasks]))
        )
        return respond(request.scope, prepared, version=tables.version)

    @read_only(
        "/v1/tasks/{slug:str}", operation_id="getTask", summary="One task version with its full specification",
        description="The task's item as in /v1/tasks plus `spec`, the whole decoded specification. "
        "The latest version unless `version` is given (`slug@version` in the path works too).",
        body=schemas.TaskDetail,
        errors={400: "`invalid_parameter`: malformed slug or version",
                404: "`task_not_found` (also when the path's `@version` and `?version=` differ)"},
    )
    async def task(
        request: Request,
        service: NamedDependency[Service],
        slug: Annotated[str, Parameter(pattern=TASK_REF_PATTERN, description="Task slug, or `slug@version`.")],
        # Litestar 2.25 documents the inner constraint and validates the outer one of an Optional parameter
        version: Optional[Annotated[int, Parameter(ge=0)]] = Parameter(
            default=None, ge=0, description="Task version; latest when absent."
        ),
    ) -> ASGIResponse:
        tables = service.tables(request.scope)
        name, ref_version = parse_task_ref(slug, name="slug")
        if ref_version is not None and version is not None and ref_version != version:
            # well-formed, so not a 400: it names a task version that cannot exist
            raise ApiError(404, "task_not_found", f"the path names version {ref_version} but ?version= says {version}")
        wanted = version if version is not None else ref_version
        entry = tables.find_task(name, wanted)
        if entry is None:
            raise task_not_found(name if wanted is None else f"{name}@{wanted}")
        key = ("task", entry.ref)
        prepared = tables.bodies.get(key) or tables.bodies.put(key, prepare(render.task_detail(entry)))
        return respond(request.scope, prepared, version=tables.version)

    return [*tasks, *task]
