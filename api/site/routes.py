"""The website's routes: HTML pages of the published warehouse, plus ``/llms.txt`` and the stylesheet.

Each page is a GET (and HEAD) that, like every ``/v1`` handler, receives the ``Service`` by
dependency injection (``service: NamedDependency[Service]``), takes the served ``Tables`` once, renders a template
and links to its JSON twin. Pages live in their own ``Router`` with their own
exception handlers, so an unknown run or task, a bad parameter, or a warehouse not yet published
gives an HTML page with the right status here while ``/v1`` and ``/artifacts`` keep answering JSON
(the app-level handlers still answer 405 and unknown paths everywhere).

The hand-made pages here are the site pages of the read questions that name them
(``ReadQuestion.site_page``: the task page shows the leaderboard); every other question gets the page
``api.site.question_pages`` derives from its declaration, in the same Router.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio.to_thread
from litestar import Request, Router
from litestar.exceptions import ValidationException
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, Parameter
from litestar.response import Response
from litestar.response.base import ASGIResponse

from api import answers, release_views, render
from api.detectable import detectable_difference
from api.errors import ApiError, invalid_parameter, task_not_found
from api.params import parse_task_ref
from api.responses import CACHE_PUBLISHED, NO_WAREHOUSE, AsResponse, Prepared, respond
from api.routes.compare import comparison
from api.service import Service, service_of
from api.site import agent_text, downloads, views
from api.site.pages import CACHE_PAGE, CSS_PATH, STATIC, TEXT, page_reply
from api.site.pages import common_context as _common
from api.site.pages import page as _page
from api.site.pages import page_route as _page_route
from api.site.pages import render as render_template
from api.site.question_pages import question_page_handlers
from api.tables import Tables, TaskEntry
from warehouse.keys import read_keys
from medbench.layout import RUN_ID_RE

log = logging.getLogger(__name__)

FAVICON_PATH = "/favicon.ico"


def _error_page(request: Request, status: int, heading: str, message: str) -> Response:
    service = service_of(request)  # an exception handler: Litestar injects nothing here
    tables = service.store.current()
    body = render_template("error.html", **_common(request, service, tables, title=heading, twin=None),
                           status=status, heading=heading, message=message)
    return AsResponse(page_reply(request.scope, body, version=tables.version if tables else NO_WAREHOUSE, status=status))


def not_found_page(request: Request, message: str) -> Response:
    """The HTML 404 a browser gets for an unknown path outside ``/v1`` and ``/artifacts`` (``api.error_handlers``)."""
    return _error_page(request, 404, "Not found", message)


def _on_api_error(request: Request, exc: ApiError) -> Response:
    headings = {404: "Not found", 400: "Bad request", 503: "Nothing published yet"}
    return _error_page(request, exc.status, headings.get(exc.status, "Error"), exc.message)


def _on_validation(request: Request, exc: ValidationException) -> Response:
    return _error_page(request, 400, "Bad request", "a query parameter of this page is not valid: " + str(exc.detail))


def _on_crash(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error rendering %s", request.scope.get("path"), exc_info=exc)
    return _error_page(request, 500, "Internal error", "something went wrong rendering this page; it has been logged")


def _tier_of(tier: str | None) -> str | None:
    """The leaderboard page's tier filter (blank: all tiers), or the error to show."""
    if tier and tier not in views.TIERS:
        raise invalid_parameter(f"tier must be one of {', '.join(views.TIERS)}")
    return tier or None


def _board_of(tables: Tables, slug: str, version: int | None, model_type: str | None) -> tuple[TaskEntry, str | None]:
    """The task version and model type a leaderboard page (or its CSV) asks for, or the error to show."""
    name, ref_version = parse_task_ref(slug, name="slug")
    wanted = version if version is not None else ref_version
    entry = tables.find_task(name, wanted)
    if entry is None:
        raise task_not_found(name if wanted is None else f"{name}@{wanted}")
    model_type = model_type or None
    if model_type is not None and model_type not in views.MODEL_TYPES:
        raise invalid_parameter(f"model_type must be one of {', '.join(views.MODEL_TYPES)}")
    return entry, model_type


def _task_of(tables: Tables, ref: str | None) -> TaskEntry | None:
    """The compare page's ``task`` (``slug@version`` or ``slug``, the latest), None when not given."""
    if ref is None or not ref.strip():
        return None
    name, version = parse_task_ref(ref.strip(), name="task")
    entry = tables.find_task(name, version)
    if entry is None:
        raise task_not_found(ref.strip()[:80])
    return entry


def _handlers() -> list[HTTPRouteHandler]:
    @_page_route("/")
    async def home(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.tables(request.scope)
        return _page(request, service, tables, "index.html", title="medbench", twin="/v1/stats", nav="home",
                     summaries=views.home(tables), numbers=render.stats(tables, service.reuses.count))

    @_page_route("/tasks/{slug:str}")
    async def task(
        request: Request,
        service: NamedDependency[Service],
        slug: FromPath[str],
        version: int | None = Parameter(default=None, ge=0),
        model_type: str | None = Parameter(default=None),
        tier: str | None = Parameter(default=None),
        release: str | None = Parameter(default=None),
    ) -> ASGIResponse:
        tables = release_views.as_of(service.tables(request.scope), service.settings.data, release)
        entry, model_type = _board_of(tables, slug, version, model_type)
        tier = _tier_of(tier)
        base = service.base_url(request.scope)
        twin = views.query("/v1/leaderboard", task=entry.ref, model_type=model_type, tier=tier,
                           release=tables.release)
        return _page(
            request, service, tables, "task.html", title=f"{entry.title or entry.ref}", twin=twin, nav="tasks",
            task=entry, versions=views.task_versions(tables, entry.slug), model_type=model_type,
            model_types=views.present_model_types(tables, entry, model_type), tier=tier, tiers=views.TIERS,
            board=views.leaderboard(tables, entry, model_type, base, tier),
            detectable=await anyio.to_thread.run_sync(detectable_difference, service.settings.data, tables, entry),
            intervals=views.task_intervals(tables, entry), comparison=views.comparison_method(entry),
            flow_steps=views.flow_steps(entry),
            dataset=tables.dataset_by_slug.get(entry.dataset), spec_twin=f"/v1/tasks/{entry.slug}?version={entry.version}",
            csv_url=views.query(f"/tasks/{entry.slug}/leaderboard.csv", version=entry.version, model_type=model_type,
                                tier=tier),
            releases=release_views.recent(service.settings.data),
        )

    @_page_route("/tasks/{slug:str}/leaderboard.csv")
    async def task_csv(
        request: Request,
        service: NamedDependency[Service],
        slug: FromPath[str],
        version: int | None = Parameter(default=None, ge=0),
        model_type: str | None = Parameter(default=None),
        tier: str | None = Parameter(default=None),
        metric: str | None = Parameter(default=None),
    ) -> ASGIResponse:
        tables = service.tables(request.scope)
        entry, model_type = _board_of(tables, slug, version, model_type)
        body = downloads.leaderboard_csv(tables, entry, model_type, service.base_url(request.scope),
                                         metric or None, _tier_of(tier))
        headers = {"x-content-type-options": "nosniff",
                   "content-disposition": f'attachment; filename="{downloads.filename(entry, model_type)}"'}
        return respond(request.scope, Prepared(body), version=tables.version, cache_control=CACHE_PAGE,
                       media_type=downloads.CSV, extra_headers=headers)

    @_page_route("/r/{run_id:str}")
    async def result(request: Request, service: NamedDependency[Service], run_id: FromPath[str],
                     release: str | None = Parameter(default=None)) -> ASGIResponse:
        tables = release_views.as_of(service.tables(request.scope), service.settings.data, release)
        published = tables.results.get(run_id) if RUN_ID_RE.match(run_id) else None
        if published is None:
            raise ApiError(404, "run_not_found", f"no published result has the run id {run_id[:40]!r}")
        base = service.base_url(request.scope)
        dataset = tables.dataset_by_slug.get(published.record.dataset)
        full = answers.full_result(tables, published, base)
        task = tables.task_by_ref.get(full.task)
        return _page(
            request, service, tables, "result.html", title=f"{full.model.name} on {full.task}",
            twin=views.query(f"/v1/results/{run_id}", release=tables.release), nav="tasks", r=full, dataset=dataset,
            task=task, figures=views.result_figures(full), item_words=views.item_words(task),
            unit=views.resampling_unit(task),
            columns=views.predictions_columns(service.settings.data.predictions_path(run_id), task),
            others=views.same_task_results(tables, published),
            log=views.log_inclusion(service.settings.data.root, "result", run_id),
        )

    @_page_route("/models")
    async def models(request: Request, service: NamedDependency[Service],
                     q: str | None = Parameter(default=None)) -> ASGIResponse:
        tables = service.tables(request.scope)
        q = q if views.model_needle(q) is not None else None
        return _page(request, service, tables, "models.html", title="Models", twin=views.query("/v1/models", q=q),
                     nav="models", models=views.models(tables, q), q=q or "")

    @_page_route("/datasets")
    async def datasets(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.tables(request.scope)
        return _page(request, service, tables, "datasets.html", title="Datasets", twin="/v1/datasets", nav="datasets",
                     datasets=tables.datasets, tasks=tables.tasks)

    @_page_route("/about")
    async def about(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.tables(request.scope)
        return _page(request, service, tables, "about.html", title="About", twin="/v1/stats", nav="about",
                     numbers=render.stats(tables, service.reuses.count), tasks=views.about_intervals(tables),
                     keys=read_keys(service.settings.data))

    @_page_route("/agents")
    async def agents(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.tables(request.scope)
        body = agent_text.agents_html(tables, service.base_url(request.scope))
        return page_reply(request.scope, body, version=tables.version)

    @_page_route("/llms.txt")
    async def llms(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.tables(request.scope)
        body = agent_text.llms_text(tables, service.base_url(request.scope))
        return page_reply(request.scope, body, version=tables.version, media_type=TEXT)

    @_page_route("/compare")
    async def compare(
        request: Request,
        service: NamedDependency[Service],
        a: str | None = Parameter(default=None),
        b: str | None = Parameter(default=None),
        task: str | None = Parameter(default=None),
    ) -> ASGIResponse:
        tables = service.tables(request.scope)
        a, b = (a or "").strip() or None, (b or "").strip() or None
        chosen = _task_of(tables, task)
        page = {"title": "Compare two results", "nav": "compare"}
        if a is None or b is None:
            return _page(request, service, tables, "compare.html", twin=None, **page,
                         picker=views.compare_picker(tables, chosen, a, b), cmp=None, mismatch=None)
        first, second = tables.results.get(a), tables.results.get(b)
        if first is not None and second is not None and first.record.task != second.record.task:
            # a person picked results of two tasks: the form again, for A's task, with what went wrong (400 as on
            # /v1/compare, so a script still sees an invalid request)
            mismatch = {"a": first, "b": second}
            return _page(request, service, tables, "compare.html", twin=None, status=400, **page,
                         picker=views.compare_picker(tables, None, a, None), cmp=None, mismatch=mismatch)
        body = await comparison(service, tables, a, b)
        task_entry = tables.task_by_ref.get(body.task)
        detectable = (await anyio.to_thread.run_sync(detectable_difference, service.settings.data, tables, task_entry)
                      if task_entry is not None else None)
        return _page(request, service, tables, "compare.html", twin=views.query("/v1/compare", a=a, b=b), **page,
                     picker=views.compare_picker(tables, None, a, b), cmp=views.comparison_context(tables, body),
                     mismatch=None, detectable=detectable)

    @_page_route("/releases/{release_id:str}")
    async def release(request: Request, service: NamedDependency[Service], release_id: FromPath[str]) -> ASGIResponse:
        """The release every citation links (its BibTeX's ``howpublished``): what it published, as it stood."""
        tables = service.tables(request.scope)
        context = await anyio.to_thread.run_sync(release_views.page_context, tables, service.settings.data,
                                                 release_id, service.base_url(request.scope))
        log = await anyio.to_thread.run_sync(views.log_inclusion, service.settings.data.root, "release",
                                             context["release"].id)
        return _page(request, service, tables, "release.html", title=f"Release {context['release'].id}",
                     twin=f"/v1/releases/{context['release'].id}", nav="", log=log, **context)

    @_page_route("/submissions")
    async def submissions(request: Request, service: NamedDependency[Service], owner: str | None = Parameter(default=None),
                          state_filter: str | None = Parameter(query="state", default=None),
                          offset: int = Parameter(default=0, ge=0)) -> ASGIResponse:
        """Every submission and its public state: what ``/v1/submissions`` lists (no token, ever)."""
        from typing import get_args

        from api.schemas import SubmissionState

        owner, state = (owner or "").strip() or None, (state_filter or "").strip() or None
        if state is not None and state not in get_args(SubmissionState):
            raise invalid_parameter(f"state must be one of {', '.join(get_args(SubmissionState))}")
        limit = 100
        page, total = await anyio.to_thread.run_sync(
            lambda: service.submissions.list(owner=owner, state=state, limit=limit, offset=offset))
        tables = service.store.current()
        twin = views.query("/v1/submissions", owner=owner, state=state, offset=offset or None)
        more = views.query("/submissions", owner=owner, state=state, offset=offset + limit) \
            if offset + limit < total else None
        body = render_template("submissions.html", **_common(request, service, tables, title="Submissions", twin=twin,
                                                               nav="submissions"),
                               subs=page, total=total, offset=offset, owner=owner or "", state=state or "",
                               states=get_args(SubmissionState), more=more)
        return page_reply(request.scope, body, version=tables.version if tables else NO_WAREHOUSE)

    @_page_route("/submissions/{submission_id:str}")
    async def submission(request: Request, service: NamedDependency[Service], submission_id: FromPath[str]) -> ASGIResponse:
        """Where a model submission stands: its state and why, its runs, every transition (the store, not the warehouse)."""
        found = await anyio.to_thread.run_sync(_submission_or_404, service, submission_id)
        tables = service.store.current()
        body = render_template("submission.html", **_common(request, service, tables, title=f"Submission {found.id}",
                                                              twin=f"/v1/submissions/{found.id}"), sub=found)
        return page_reply(request.scope, body, version=tables.version if tables else NO_WAREHOUSE)

    css = Prepared((STATIC / "site.css").read_bytes())

    @_page_route(CSS_PATH)
    async def stylesheet(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        version = service.store.peek_version() or NO_WAREHOUSE
        return respond(request.scope, css, version=version, cache_control=CACHE_PUBLISHED, media_type="text/css; charset=utf-8")

    icon = Prepared((STATIC / "favicon.svg").read_bytes())

    @_page_route(FAVICON_PATH)
    async def favicon(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        """The icon every page links (an SVG; browsers that ask /favicon.ico unprompted get it too, not a 404)."""
        version = service.store.peek_version() or NO_WAREHOUSE
        return respond(request.scope, icon, version=version, cache_control=CACHE_PUBLISHED, media_type="image/svg+xml")

    own = [*home, *task, *task_csv, *result, *models, *datasets, *about, *agents, *llms, *compare, *release, *submissions, *submission,
           *stylesheet, *favicon]
    # the pages the table of read questions derives (api.site.question_pages), checked against these
    return [*own, *question_page_handlers(path for handler in own for path in handler.paths)]


def _submission_or_404(service: Service, submission_id: str) -> Any:
    from medbench.submissions import SubmissionNotFound

    try:
        if len(submission_id) == 12:
            return service.submissions.get(submission_id)
    except SubmissionNotFound:
        pass
    raise ApiError(404, "submission_not_found", f"no submission {submission_id[:40]!r}")


def site_route_handlers() -> list[Router]:
    """Fresh handlers for one app (Litestar gives each handler one owner), in a Router with HTML errors."""
    return [Router(
        "/",
        route_handlers=_handlers(),
        exception_handlers={
            ApiError: _on_api_error,
            ValidationException: _on_validation,
            Exception: _on_crash,
        },
    )]
