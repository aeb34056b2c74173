"""The OpenAPI 3.1 document of the API, generated from the same handlers and Structs that serve it.

Litestar's own OpenAPI router would be mounted inside the app and answer unknown paths below it
with an HTML page; the contract wants JSON errors everywhere. So the served app has no OpenAPI
router at all, and the document is generated once, on demand, by a schema-only Litestar app built
from a fresh set of the same route handlers. It is never served itself.
"""

from __future__ import annotations

from typing import Any

from litestar import Litestar, Router
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Server

TITLE = "medbench"
API_VERSION = "p0"
DESCRIPTION = (
    "medbench evaluates medical AI models on open datasets from Seoul National University Hospital, once per "
    "model and task version, and publishes scores with 95% confidence intervals, per-item predictions and exact "
    "versions. Look up before you run: `GET /v1/lookup?model=...&task=...`. Errors are always "
    '`{"error": code, "message": text}`. Every response carries `X-Medbench-Warehouse`, `ETag` and '
    "`Cache-Control`; HEAD is accepted wherever GET is."
)


def build_document(router: Router) -> dict[str, Any]:
    config = OpenAPIConfig(title=TITLE, version=API_VERSION, description=DESCRIPTION, servers=[Server(url="/")])
    schema_only = Litestar(route_handlers=[router], openapi_config=config)
    return schema_only.openapi_schema.to_schema()
