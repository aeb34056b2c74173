"""The ``/v1`` route of each read question, built from its declaration in ``api.questions``.

Litestar reads a handler's parameters from its signature (names, annotations, defaults: what it
validates and what the OpenAPI document shows), so the handler of a question is one generic
function given the signature its ``params`` declare: ``request``, the injected ``service``, then each
parameter with its type and its Litestar declaration. The handler turns what Litestar parsed into the
question's parameter Struct and asks ``api.asking.ask``, as the MCP tool does.
"""

from __future__ import annotations

import inspect
import keyword
import re
from typing import Annotated, Any

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath
from litestar.response.base import ASGIResponse

from api.asking import ask
from api.questions import Param, ReadQuestion, registered, text
from api.responses import CACHE_LIVE, CACHE_PUBLISHED, respond
from api.routing import read_only
from api.service import SERVICE, Service

CACHE = {None: CACHE_PUBLISHED, "live": CACHE_LIVE}
_PATH_PARAM_RE = re.compile(r"{(\w+)}")


def litestar_path(path: str) -> str:
    """``/v1/results/{run_id}`` as Litestar declares it: ``/v1/results/{run_id:str}``."""
    return _PATH_PARAM_RE.sub(r"{\1:str}", path)


def python_name(param: Param) -> str:
    """The handler's name for ``param``: its wire name, or its field where that is no Python name
    (``from``: the route's own declaration then gives Litestar the wire name)."""
    return param.name if param.name.isidentifier() and not keyword.iskeyword(param.name) else param.attr


def _parameter(param: Param) -> inspect.Parameter:
    declared = param.declare() if param.declare else inspect.Parameter.empty
    if param.route_type is not None:  # the route's own annotation (and the declaration as its default)
        annotation, default = param.route_type(), declared
    elif param.in_path:
        annotation = Annotated[param.type, declared] if param.declare else FromPath[param.type]
        default = inspect.Parameter.empty
    else:
        annotation, default = param.type, declared
    return inspect.Parameter(python_name(param), inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation,
                             default=default)


def handlers(question: ReadQuestion) -> list[HTTPRouteHandler]:
    """GET (documented), HEAD and the refusal of OPTIONS for ``question``'s route."""

    async def handler(request: Request, service: Service, **given: Any) -> ASGIResponse:
        args = question.args(**{p.attr: given[python_name(p)] for p in question.params})
        answer, tables = await ask(question, service, request.scope, args, service.base_url(request.scope))
        if answer.counts_reuse:
            return service.reply(request.scope, tables, answer)  # type: ignore[arg-type]
        version = tables.version if tables is not None else service.store.peek_version()
        return respond(request.scope, answer.prepared, version=version, cache_control=CACHE[question.cache_control])

    fixed = [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Request),
             inspect.Parameter(SERVICE, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=NamedDependency[Service])]
    parameters = [*fixed, *(_parameter(p) for p in question.params)]
    handler.__signature__ = inspect.Signature(parameters, return_annotation=ASGIResponse)  # type: ignore[attr-defined]
    handler.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": ASGIResponse}
    handler.__name__ = handler.__qualname__ = question.name
    return read_only(litestar_path(question.path), operation_id=question.operation_id, summary=question.summary,
                     description=text(question.description), body=question.body,
                     errors=question.errors or None)(handler)


def question_handlers() -> list[HTTPRouteHandler]:
    """The routes of every question that has its own (``route``), in the table's order."""
    return [h for q in registered() if q.route for h in handlers(q)]
