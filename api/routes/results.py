"""``GET /v1/results`` (filtered, paginated listing) and ``GET /v1/results/{run_id}`` (one full result).

The listing holds every published result, superseded ones included (each summary says
``superseded_by``), ordered by task, then current before superseded, then leaderboard order. All
filters combine with AND; a filter naming nothing known matches nothing (an empty list, not an
error). ``model`` matches a slug, or every model using that provider model id.
"""

from typing import Optional

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, Parameter
from litestar.response.base import ASGIResponse

from api import answers, release_views, render, schemas
from api.params import (BLANKS, MAX_CACHED_PARAMETER_CHARS, limit_parameter, offset_parameter, parse_task_ref,
                        task_parameter)
from api.responses import prepare, respond
from api.routing import read_only
from api.service import Service
from api.tables import Published, Tables


def _matching(
    tables: Tables, dataset: str | None, task: str | None, model: str | None, model_type: str | None,
    tier: str | None = None,
) -> list[Published]:
    refs: set[str] | None = None
    if task is not None:
        slug, version = parse_task_ref(task)
        entry = tables.find_task(slug, version)
        refs = {entry.ref} if entry else set()
    slugs = set(tables.resolve_model(model.strip(BLANKS))) if model is not None else None
    return [
        p for p in tables.listing
        if (dataset is None or p.record.dataset == dataset)
        and (refs is None or p.record.task in refs)
        and (slugs is None or p.record.model.slug in slugs)
        and (model_type is None or p.record.model.type == model_type)
        and (tier is None or p.record.tier == tier)
    ]


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/results", operation_id="listResults", summary="Results matching all given filters",
        description="Result summaries, filtered (all filters combine with AND) and paginated. "
        "`task` accepts `slug@version` or `slug` (latest version); `model` a slug or a provider model id.",
        body=schemas.ResultPage,
        errors={400: "`invalid_parameter`", 404: "`release_not_found`"},
    )
    async def results(
        request: Request,
        service: NamedDependency[Service],
        dataset: Optional[str] = Parameter(default=None, description="Dataset slug."),
        task: Optional[str] = task_parameter(required=False),
        model: Optional[str] = Parameter(default=None, description="Model slug or provider model id."),
        model_type: Optional[schemas.ModelType] = Parameter(default=None, description="Model type."),
        tier: Optional[schemas.Tier] = Parameter(default=None, description="Tier: baseline or official."),
        limit: int = limit_parameter(),
        offset: int = offset_parameter(),
        release: Optional[str] = release_views.release_parameter(),
    ) -> ASGIResponse:
        tables = release_views.as_of(service.tables(request.scope), service.settings.data, release)
        base = service.base_url(request.scope)
        key = ("results", dataset, task, model, model_type, tier, limit, offset, base)
        prepared = tables.bodies.get(key)
        if prepared is None:
            matches = _matching(tables, dataset, task, model, model_type, tier)
            page = [render.summary(p, base) for p in matches[offset : offset + limit]]
            body = schemas.ResultPage(results=page, total=len(matches), limit=limit, offset=offset)
            prepared = prepare(body)
            if sum(len(text or "") for text in (dataset, task, model)) <= MAX_CACHED_PARAMETER_CHARS:
                tables.bodies.put(key, prepared)  # no memory for made-up megabyte names
        return respond(request.scope, prepared, version=tables.version)

    @read_only(
        "/v1/results/{run_id:str}", operation_id="getResult", summary="One result",
        description="All metrics with 95% CIs, configuration, versions, usage, cost, BibTeX and the predictions URL.",
        body=schemas.Result,
        errors={400: "`invalid_parameter`", 404: "`run_not_found` (also for a malformed run id); `release_not_found`"},
    )
    async def result(request: Request, service: NamedDependency[Service], run_id: FromPath[str],
                     release: Optional[str] = release_views.release_parameter()) -> ASGIResponse:
        tables = release_views.as_of(service.tables(request.scope), service.settings.data, release)
        prepared = answers.result(tables, run_id, service.base_url(request.scope))
        return respond(request.scope, prepared, version=tables.version)

    return [*results, *result]
