"""The project's own text for agents (``/agents`` and ``/llms.txt``), rendered for any base URL.

The website serves these pages and the MCP server offers the same text as resources
(``medbench://agents``, ``medbench://llms.txt``), so both are rendered here, from the served
``Tables`` and the base URL the links should use, and nowhere else.
"""

from __future__ import annotations

from typing import Any

from api.site import views
from api.site.pages import render
from api.tables import Tables

CSS_PATH = "/static/site.css"


def common(tables: Tables | None, base: str, *, title: str, twin: str | None, nav: str = "") -> dict[str, Any]:
    """What every page's layout needs."""
    from api.responses import NO_WAREHOUSE

    return {
        "title": title, "twin": twin, "nav": nav, "css": CSS_PATH,
        "demo": bool(tables and tables.demo), "version": tables.version if tables else NO_WAREHOUSE, "base": base,
    }


def agents_html(tables: Tables, base: str) -> str:
    return render("agents.html", **common(tables, base, title="For agents", twin="/v1/openapi.json", nav="agents"),
                  ex=views.agent_examples(tables, base))


def llms_text(tables: Tables, base: str) -> str:
    return render("llms.txt", **common(tables, base, title="medbench", twin=None),
                  ex=views.agent_examples(tables, base), summaries=views.home(tables))
