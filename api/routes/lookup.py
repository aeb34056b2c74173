"""``GET /v1/lookup``: rule one, "look up before you run".

``model`` is a slug or a provider model id; an id shared by several providers is refused with the
slugs to choose from. An unknown model is simply ``not_evaluated``; an unknown task is an error.
Several results for the pair: the newest not superseded (precomputed per version in
``Tables.current``). The answer itself is ``api.answers.lookup`` (the MCP ``lookup`` tool's too),
memoised per version, parameters and base URL; repeats of the exact request are replayed before Litestar by the outer
``api.answer_cache.AnswerCache``, which this handler knows nothing about. Its own answers count
reuses through ``Service.reply``, as the replays do.
"""

from typing import Optional

from litestar import Request
from litestar.params import Parameter
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.response.base import ASGIResponse

from api import answers, release_views, schemas
from api.params import model_parameter, task_parameter
from api.routing import read_only
from api.service import Service


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/lookup", operation_id="lookup", summary="Whether a model has been evaluated on a task",
        description="`{\"status\": \"evaluated\", \"result\": Result}` or `{\"status\": \"not_evaluated\", \"result\": null}`. "
        "With several results for the pair, the newest one not superseded.",
        body=schemas.Lookup,
        errors={
            400: "`invalid_parameter`: missing parameter, or a provider model id shared by several models "
            "(the message lists their slugs)",
            404: "`task_not_found`, `release_not_found`",
        },
    )
    async def lookup(
        request: Request,
        service: NamedDependency[Service],
        model: str = model_parameter("Model slug (`provider/name`) or the provider's model id."),
        task: str = task_parameter(),
        release: Optional[str] = release_views.release_parameter(),
        judge: Optional[str] = Parameter(default=None, max_length=200, description=(
            "Rubric tasks: the result graded by this judge model (slug) instead of the task's own judge.")),
    ) -> ASGIResponse:
        scope = request.scope
        tables = release_views.as_of(service.tables(scope), service.settings.data, release)
        base = service.base_url(scope)
        return service.reply(scope, tables, answers.lookup(tables, model, task, base, judge))

    return lookup
