"""The OpenAPI 3.1 document of the API, generated from the same handlers and Structs that serve it.

Litestar's own OpenAPI router would be mounted inside the app and answer unknown paths below it
with an HTML page; the contract wants JSON errors everywhere. So the served app has no OpenAPI
router at all, and the document is generated once, on demand, by a schema-only Litestar app built
from a fresh set of the same route handlers. It is never served itself.

Its file name is shared on purpose: the service's own module of that name (the pipeline's serves
another side).
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import msgspec

from litestar import Litestar, Router
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Server

from api import schemas
from api.params import RUN_ID_PATTERN, SLUG_PART_PATTERN

TITLE = "medbench"
GUIDE_VERSION = "p0"  # the version of the agents' guide this API implements (``x-guide-version``)
DESCRIPTION = (
    f"Implements the medbench guide for AI agents, version {GUIDE_VERSION}. "
    "medbench evaluates medical AI models on open datasets from Seoul National University Hospital, once per "
    "model and task version, and publishes scores with 95% confidence intervals, per-item predictions and exact "
    "versions. Look up before you run: `GET /v1/lookup?model=...&task=...`. Errors are always "
    '`{"error": code, "message": text}`. Every response carries `X-Medbench-Warehouse`, `ETag` and '
    "`Cache-Control`; HEAD is accepted wherever GET is."
)


# Sent with every response of every documented route (api.responses.respond and the artifacts route),
# errors included. Litestar can only document headers of a success response, so they are added here.
RESPONSE_HEADERS = {
    "X-Medbench-Warehouse": "The published warehouse version the response was answered from (`none` before any).",
    "ETag": "Strong validator of the body; send it back in `If-None-Match` to get a bodiless 304.",
    "Cache-Control": "How long the response may be reused.",
}


# Path parameters Litestar must not validate (a malformed run id is ``run_not_found`` 404, not a 400,
# docs/api.md, "Routes") but whose form the document still states, so generated clients and fuzzers know it.
PATH_PATTERNS = {"run_id": RUN_ID_PATTERN, "provider": SLUG_PART_PATTERN, "name": SLUG_PART_PATTERN}


def api_version() -> str:
    """``info.version``: the installed package's version (PEP 440), ``0.0.0+unknown`` from a bare checkout."""
    try:
        return importlib.metadata.version("medbench")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0+unknown"


def build_document(router: Router, dependencies: dict[str, Provide]) -> dict[str, Any]:
    """The document of ``router``'s handlers; ``dependencies`` are the served app's, so that injected
    parameters (``service``) are known as such and not documented as query parameters."""
    config = OpenAPIConfig(title=TITLE, version=api_version(), description=DESCRIPTION, servers=[Server(url="/")])
    schema_only = Litestar(route_handlers=[router], openapi_config=config, dependencies=dependencies)
    document = schema_only.openapi_schema.to_schema()
    document["info"]["x-guide-version"] = GUIDE_VERSION
    _document_write_routes(document)
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                if parameter["in"] == "query":
                    parameter["schema"] = without_null(parameter["schema"])
                elif parameter["in"] == "path" and parameter["name"] in PATH_PATTERNS:
                    parameter["schema"] = {**parameter["schema"], "pattern": PATH_PATTERNS[parameter["name"]]}
            for response in operation["responses"].values():
                response["headers"] = {
                    name: {"description": text, "required": True, "schema": {"type": "string"}}
                    for name, text in RESPONSE_HEADERS.items()
                }
    return document


# The write routes read their body themselves (the token is checked before a byte of it is read), so
# Litestar cannot see a ``data`` parameter to document: their request bodies and the bearer scheme are
# added here, from the same Structs.
WRITE_BODIES = {("/v1/submissions", "post"): schemas.SubmissionBody}
BEARER = {"type": "http", "scheme": "bearer",
          "description": "A token from the maintainers (`medbench tokens create`), e.g. `mbt_...`. GET routes never need one."}


def _document_write_routes(document: dict[str, Any]) -> None:
    components = document.setdefault("components", {})
    for (path, method), struct in WRITE_BODIES.items():
        operation = document["paths"].get(path, {}).get(method)
        if operation is None:
            continue
        (schema,), defs = msgspec.json.schema_components([struct], ref_template="#/components/schemas/{name}")
        for name, definition in defs.items():
            components.setdefault("schemas", {}).setdefault(name, definition)
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
        operation["security"] = [{"bearer": []}]
        components.setdefault("securitySchemes", {})["bearer"] = BEARER


def without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of an optional text query parameter without the ``null`` Litestar adds for ``Optional``.

    A query string cannot carry a JSON null: an absent parameter is simply left out, and the text
    ``null`` given to a text parameter is that text (a dataset named "null"). Only for number and
    enum parameters does the server read the text ``null`` as null (msgspec's lax conversion), so
    those keep it in the document.
    """
    options = schema.get("oneOf")
    if not options or len(options) != 2 or {"type": "null"} not in options:
        return schema
    (other,) = [option for option in options if option != {"type": "null"}]
    if other.get("type") != "string" or "enum" in other:
        return schema
    return {**other, **{key: value for key, value in schema.items() if key != "oneOf"}}
