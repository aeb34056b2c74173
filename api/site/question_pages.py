"""The website's side of the table of read questions: a page for every question, and ``/questions``.

A question declares where the site shows its answer (``ReadQuestion.site_page``): one of the
hand-made pages of ``api.site.routes`` (the task page shows the leaderboard, ``/r/<run_id>`` the
result), or nothing, and then this module derives its page from the declaration alone, at its
``/v1`` path without ``/v1`` (``/v1/log/entries`` is ``/log/entries``): its summary and description,
a form of its query parameters, and its answer, asked through ``api.asking.ask`` as the route and the
MCP tool ask it and shown as ``api.site.answer_html`` reads it along the body Struct, with its ``/v1``
route as the page's JSON twin (docs/api.md, "One table of read questions").

The page takes its parameters as the MCP tool does: the query's text converted into the question's
parameter Struct (its constraints checked), an empty box meaning the default. While a required
parameter is missing it shows the form alone. A declaration the site cannot honour (a hand-made page
it does not serve, a derived page on a path one of its pages has) stops the app from being built.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

import msgspec
from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath
from litestar.response.base import ASGIResponse

from api.asking import ask
from api.errors import invalid_parameter
from api.params import BLANKS, check_query
from api.questions import ReadQuestion, path_shape, registered, text
from api.service import SERVICE, Service
from api.site import answer_html, views
from api.site.pages import page, page_route

INDEX_PATH = "/questions"


def arguments(question: ReadQuestion, given: Mapping[str, str]) -> Any:
    """``given`` (path and query text) as ``question``'s parameter Struct; None while a required one is missing."""
    wire = {p.name: given[p.name] for p in question.params if given.get(p.name, "").strip(BLANKS)}
    attrs = {p.attr: p.name for p in question.params}
    if any(f.required and attrs[f.name] not in wire for f in msgspec.structs.fields(question.args)):
        return None
    try:
        return msgspec.convert(wire, question.args, strict=False)
    except msgspec.ValidationError as exc:
        raise invalid_parameter(f"a parameter of this page is not valid: {exc}") from None


def fill(path: str, values: Mapping[str, str]) -> str:
    """``path`` with each ``{name}`` replaced by its value, quoted."""
    for name, value in values.items():
        path = path.replace("{" + name + "}", quote(value, safe="@"))
    return path


def surfaces(question: ReadQuestion) -> list[tuple[str, str]]:
    """Where else the question is asked, as (surface, how) pairs."""
    out = [("route", f"GET {question.path}")] if question.route else []
    if question.tool is not None:
        out.append(("MCP tool", question.tool.name))
    if question.client is not None:
        out.append(("client", f"ApiClient.{question.client}()"))
    if question.cli is not None:
        out.append(("CLI", f"medbench {question.cli.command}"))
    return out


def _page_handlers(question: ReadQuestion) -> list[HTTPRouteHandler]:
    in_path = [p.name for p in question.params if p.in_path]
    in_query = frozenset(p.name for p in question.params if not p.in_path)

    async def handler(request: Request, service: Service, **path: str) -> ASGIResponse:
        check_query(request.scope["query_string"], in_query)
        given = {name: value for name, value in request.query_params.items() if name in in_query} | path
        args = arguments(question, given)
        tables, parts, twin = service.store.current(), None, None
        if args is not None:
            answer, asked = await ask(question, service, request.scope, args, service.base_url(request.scope))
            tables = asked or tables
            parts = answer_html.answer_parts(msgspec.json.decode(answer.prepared.body), question.body)
            if question.route:
                twin = views.query(fill(question.path, path), **{k: v for k, v in given.items() if k in in_query})
        elif question.warehouse:
            tables = service.tables(request.scope)  # nothing published: the site's 503 page, as on every page
        return page(request, service, tables, "question.html", title=question.summary or question.name, twin=twin,
                    question=question, description=answer_html.prose(text(question.description)),
                    asked=[(name, path[name]) for name in in_path], fields=answer_html.form_fields(question, given),
                    parts=parts, surfaces=surfaces(question))

    fixed = [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Request),
             inspect.Parameter(SERVICE, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=NamedDependency[Service])]
    parameters = fixed + [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=FromPath[str])
                          for name in in_path]
    handler.__signature__ = inspect.Signature(parameters, return_annotation=ASGIResponse)  # type: ignore[attr-defined]
    handler.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": ASGIResponse}
    handler.__name__ = handler.__qualname__ = f"page_{question.name}"
    route_path = question.site_path
    for name in in_path:
        route_path = route_path.replace("{" + name + "}", "{" + name + ":str}")
    return page_route(route_path)(handler)


def _index_handlers() -> list[HTTPRouteHandler]:
    @page_route(INDEX_PATH)
    async def questions(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        """Every read question, its page and its other surfaces: the table as people read it."""
        rows = [(q, answer_html.prose(q.summary or q.name), surfaces(q)) for q in registered()]
        return page(request, service, service.store.current(), "questions.html", title="Read questions",
                    twin="/v1/openapi.json", rows=rows)

    return questions


def question_page_handlers(served: Iterable[str]) -> list[HTTPRouteHandler]:
    """The derived page of every question without a hand-made one, and ``/questions``.

    ``served``: the paths of the site's own pages. A question naming a page the site does not serve,
    or whose derived page would sit on one of them, is a declaration error (``ValueError``)."""
    taken = {path_shape(path) for path in served} | {INDEX_PATH}
    for question in registered():
        shape = path_shape(question.site_path)
        if question.site_page is not None and shape not in taken:
            raise ValueError(f"read question {question.name!r} names the site page {question.site_page!r}, which the "
                             "site does not serve; give a page of api.site.routes, or none for a derived page")
        if question.site_page is None and shape in taken:
            raise ValueError(f"read question {question.name!r}: its derived site page {question.site_path!r} is "
                             "already a page of the site; name that page (site_page) or give the question another route")
    derived = [h for q in registered() if q.site_page is None for h in _page_handlers(q)]
    return [*derived, *_index_handlers()]
