"""``GET /v1/tasks`` (one item per task version) and ``GET /v1/tasks/{slug}`` (with the full spec)."""

from functools import partial
from typing import Annotated, Optional

import anyio
from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import Parameter
from litestar.response.base import ASGIResponse

from api import answers, schemas
from api.params import TASK_REF_PATTERN
from api.responses import respond
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
        return respond(request.scope, answers.tasks(tables), version=tables.version)

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
        prepared = await anyio.to_thread.run_sync(partial(answers.task, tables, slug, version, service.settings.data))
        return respond(request.scope, prepared, version=tables.version)

    return [*tasks, *task]
