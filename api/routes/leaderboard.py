"""``GET /v1/leaderboard``: one task version's current results, ranked.

Rows are the task's results not superseded (one per model and tier), already sorted per version by
``api.tables``; a request only filters by model type, cuts to ``limit`` and numbers the rows
(1-based, no shared ranks, so a filtered board is ranked among the models it shows).
"""

from typing import Optional

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import Parameter
from litestar.response.base import ASGIResponse

from api import answers, release_views, schemas
from api.params import limit_parameter, metric_parameter, task_parameter
from api.responses import respond
from api.routing import read_only
from api.service import Service


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/leaderboard", operation_id="getLeaderboard", summary="Ranked rows for one task",
        description="The task's current results (one per model), sorted by `metric` (default the primary) in its "
        "direction (higher, lower, or closest to its target), then eval_date, then run_id; `rank` is the 1-based "
        "position in the returned list. `rank_low`/`rank_high`: the hull of the simultaneous 95% rank set (Mogstad "
        "et al. 2024) and the marginal bootstrap interval (`marginal_rank_low`/`marginal_rank_high`), recomputed "
        "for the metric ranked by; `rank_method` says how, or that only point ranks are available.",
        body=schemas.Leaderboard,
        errors={400: "`invalid_parameter`: no task, bad limit, unknown model_type",
                404: "`task_not_found`, `metric_not_found` (the task's metrics named), `release_not_found`"},
    )
    async def leaderboard(
        request: Request,
        service: NamedDependency[Service],
        task: str = task_parameter(),
        model_type: Optional[schemas.ModelType] = Parameter(default=None, description="Only models of this type."),
        limit: int = limit_parameter("At most this many rows."),
        metric: Optional[str] = metric_parameter(),
        tier: Optional[schemas.Tier] = Parameter(default=None, description="Only rows of this tier, each keeping "
                                                 "its rank on the whole board; no match is `rows: []`."),
        release: Optional[str] = release_views.release_parameter(),
        judge: Optional[str] = Parameter(default=None, max_length=200, description=(
            "Rubric tasks: the board of results graded by this judge model (slug) instead of the task's own "
            "judge; point ranks only (rank sets are computed for the task's judge).")),
    ) -> ASGIResponse:
        tables = service.tables(request.scope)
        tables = release_views.as_of(tables, service.settings.data, release)
        base = service.base_url(request.scope)
        prepared = answers.leaderboard(tables, task, model_type, limit, base, metric, tier, judge)
        return respond(request.scope, prepared, version=tables.version)

    return leaderboard
