"""Rendering pages: one Jinja2 environment (autoescaped), the number formats, the frame every page
shares (``common_context``, ``page``, ``page_route``: the hand-made pages of ``api.site.routes`` and the
derived ones of ``api.site.question_pages`` alike), and the HTML reply.

Every page goes through ``page_reply``, which adds what every API answer carries
(``X-Medbench-Warehouse``, a strong ``ETag``, ``Cache-Control``, HEAD and 304 handling) by reusing
``api.responses.respond``, and the security headers of ``api.site.security``; HTML differs from
JSON only in its media type and those headers. Formats live here, not in templates, so that a
number reads the same on every page (three decimals for scores, dollars for cost, "unknown" for a
null).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from litestar import get, route
from litestar.enums import HttpMethod
from litestar.handlers import HTTPRouteHandler
from litestar.types import Scope

from api.responses import NO_WAREHOUSE, Prepared, Reply, respond
from api.site.security import PAGE_HEADERS

if TYPE_CHECKING:
    from litestar import Request

    from api.service import Service
    from api.tables import Tables

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = Path(__file__).resolve().parent / "static"
HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
CSS_PATH = "/static/site.css"
CACHE_PAGE = "no-cache"  # pages show live counters (reuses); revalidation is cheap with the ETag


def score(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def usd(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value == 0:
        return "$0"
    if abs(value) < 0.0001:
        return "< $0.0001"
    return f"${value:,.2f}" if abs(value) >= 0.01 else f"${value:.4f}"


CONTAMINATION_WORDS = {"declared": "declared: trained on this dataset", "possible": "possible contamination",
                       "unlikely": "unlikely", "unknown": "unknown"}


def contamination(status: str) -> str:
    """A result's contamination status for people (``contamination_status``)."""
    return CONTAMINATION_WORDS.get(status, status)


def p_value(value: float, at_floor: bool = False) -> str:
    """``p = 0.0123``, or ``p < 0.0001`` for smaller values; a p at its procedure's floor (a
    bootstrap's 2/(R+1)) is a bound, never an exact value: ``p ≤ 0.0020``."""
    if not math.isfinite(value):
        return "p n/a"
    if at_floor:
        return f"p ≤ {value:.4f}"
    if value < 0.0001:
        return "p < 0.0001"
    return f"p = {value:.4f}"


def date(value: dt.date | str | None) -> str:
    if value is None:
        return "unknown"
    return value.isoformat() if isinstance(value, dt.date) else str(value)


def pretty_json(value: Any, indent: int = 0) -> str:
    """Indented JSON with sorted keys, but a list of plain values on one line (configs stay short)."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {pretty_json(v, indent + 1)}"
                 for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(f"{inner}{pretty_json(v, indent + 1)}" for v in value) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False, default=str)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"], default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(score=score, usd=usd, contamination=contamination, p_value=p_value, date=date,
                       pretty_json=pretty_json)
    return env


ENV = _environment()


def render(template: str, **context: Any) -> str:
    return ENV.get_template(template).render(**context)


def page_reply(scope: Scope, body: str, *, version: str, status: int = 200, media_type: str = HTML) -> Reply:
    return respond(scope, Prepared(body.encode("utf-8")), version=version, cache_control=CACHE_PAGE,
                   status=status, media_type=media_type, extra_headers=PAGE_HEADERS)


def common_context(request: Request, service: Service, tables: Tables | None, *, title: str, twin: str | None,
                   nav: str = "") -> dict[str, Any]:
    """What ``base.html`` shows on every page: title, JSON twin, navigation, demo banner, version."""
    return {
        "title": title, "twin": twin, "nav": nav, "css": CSS_PATH,
        "demo": bool(tables and tables.demo), "version": tables.version if tables else NO_WAREHOUSE,
        "base": service.base_url(request.scope),
        # a page reached through a release link says so ("as of release X"), with a link to the current state
        "as_of": tables.release if tables else None,
        "current_query": urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "release"]),
    }


def page(request: Request, service: Service, tables: Tables | None, template: str, *, title: str,
         twin: str | None, nav: str = "", status: int = 200, **context: Any) -> Reply:
    """``template`` rendered in the common frame, as the HTML reply of the version of ``tables``."""
    body = render(template, **common_context(request, service, tables, title=title, twin=twin, nav=nav), **context)
    return page_reply(request.scope, body, version=tables.version if tables else NO_WAREHOUSE, status=status)


def page_route(path: str) -> Callable[[Callable[..., Any]], list[HTTPRouteHandler]]:
    """GET and HEAD for one page (HEAD gets the GET's headers, no body; see ``api.responses``)."""

    def decorate(fn: Callable[..., Any]) -> list[HTTPRouteHandler]:
        return [
            get(path, include_in_schema=False)(fn),
            route(path, http_method=[HttpMethod.HEAD], include_in_schema=False)(fn),
        ]

    return decorate
