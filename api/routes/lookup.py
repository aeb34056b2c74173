"""``GET /v1/lookup``: rule one, "look up before you run".

``model`` is a slug or a provider model id; an id shared by several providers is refused with the
slugs to choose from. An unknown model is simply ``not_evaluated``; an unknown task is an error.
Several results for the pair: the newest not superseded (precomputed per version in
``Tables.current``). This is the hottest route, so the encoded answer is memoised per version,
parameters and base URL; repeats of the exact request are replayed before Litestar by the outer
``api.answer_cache.AnswerCache``, which this handler knows nothing about. Its own answers count
reuses through ``Service.reply``, as the replays do.
"""

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.response.base import ASGIResponse

from api import render, schemas
from api.answer_cache import Answer
from api.errors import invalid_parameter, task_not_found
from api.params import MAX_CACHED_PARAMETER_CHARS, model_parameter, parse_task_ref, require, task_parameter
from api.responses import prepare
from api.routing import read_only
from api.service import Service
from api.tables import Tables


def _answer(tables: Tables, model: str, task: str, base: str) -> Answer:
    model, task = require(model, "model"), require(task, "task")
    slug, version = parse_task_ref(task)
    entry = tables.find_task(slug, version)
    if entry is None:
        raise task_not_found(task)
    slugs = tables.resolve_model(model)
    if len(slugs) > 1:
        raise invalid_parameter(
            f"model {model!r} is the provider model id of several models; use one of their slugs: {', '.join(slugs)}"
        )
    published = tables.current.get((slugs[0], entry.ref)) if slugs else None
    if published is None:
        return Answer(prepare(schemas.Lookup(status="not_evaluated", result=None)))
    dataset = tables.dataset_by_slug.get(published.record.dataset)
    evaluated = prepare(schemas.Lookup(status="evaluated", result=render.result(published, base, dataset)))
    return Answer(evaluated, counts_reuse=True)


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/lookup", operation_id="lookup", summary="Whether a model has been evaluated on a task",
        description="`{\"status\": \"evaluated\", \"result\": Result}` or `{\"status\": \"not_evaluated\", \"result\": null}`. "
        "With several results for the pair, the newest one not superseded.",
        body=schemas.Lookup,
        errors={
            400: "`invalid_parameter`: missing parameter, or a provider model id shared by several models "
            "(the message lists their slugs)",
            404: "`task_not_found`",
        },
    )
    async def lookup(
        request: Request,
        service: NamedDependency[Service],
        model: str = model_parameter("Model slug (`provider/name`) or the provider's model id."),
        task: str = task_parameter(),
    ) -> ASGIResponse:
        scope = request.scope
        tables = service.tables(scope)
        base = service.base_url(scope)
        key = ("lookup", model, task, base)
        answer = tables.bodies.get(key)
        if answer is None:
            answer = _answer(tables, model, task, base)
            if len(model) + len(task) <= MAX_CACHED_PARAMETER_CHARS:  # no memory for made-up megabyte names
                tables.bodies.put(key, answer)
        return service.reply(scope, tables, answer)

    return lookup
