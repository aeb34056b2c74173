"""The API's routes: the read questions' (``api.question_routes``, from the table in ``api.questions``),
then the resources declared by hand, one module each; ``api_router`` builds a fresh set of their handlers.

Handlers receive the ``Service`` by dependency injection (``service: NamedDependency[Service]``, registered by
``api.app.create_app``), so building them needs no service."""

from __future__ import annotations

from litestar import Router

from api.question_routes import question_handlers
from api.routes import artifacts, health, openapi, packages, submissions

RESOURCES = (submissions, openapi, artifacts, packages, health)


def api_router() -> Router:
    """Fresh handlers in one Router: the served app and the schema-only app that generates the
    OpenAPI document each get their own (Litestar sets an owner on each handler). The OpenAPI route
    documents every route, its own included, so it is handed this function rather than importing it."""
    return Router("/", route_handlers=[*question_handlers()] + [
        handler for module in RESOURCES
        for handler in (module.handlers(api_router) if module is openapi else module.handlers())
    ])
