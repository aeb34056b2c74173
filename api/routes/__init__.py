"""The API's resources, one module each; ``api_handlers`` builds their handlers for one service."""

from __future__ import annotations

from litestar import Router

from api.routes import artifacts, compare, datasets, health, leaderboard, lookup, openapi, results, stats, tasks
from api.service import Service

RESOURCES = (datasets, tasks, leaderboard, results, lookup, compare, stats, openapi, artifacts, health)


def api_router(service: Service) -> Router:
    """Fresh handlers for one service, in one Router: the served app and the schema-only app that
    generates the OpenAPI document each get their own (Litestar sets an owner on each handler)."""
    return Router("/", route_handlers=[handler for module in RESOURCES for handler in module.handlers(service)])
