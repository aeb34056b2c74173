"""``create_app``: the read-only medbench service, a Litestar app inside one ASGI wrapper.

Wires the pieces together and nothing else: settings, the per-version tables, the reuse counter
(flushed by a lifespan task), the routes, JSON errors everywhere, CORS for GET/HEAD from any
origin, the MCP endpoint ``/mcp`` (``api.mcp_server``), and the website (``api.site``) unless ``extra_route_handlers`` says otherwise. The
``Service`` is registered once, as the app-level dependency ``service`` (``api.service``); the API
and the website handlers both receive it by declaring ``service: NamedDependency[Service]``. What ``create_app``
returns is ``api.answer_cache.AnswerCache`` around the Litestar app (its ``.app``): repeats of the
hot GETs it lists are replayed before Litestar runs, and the handlers know nothing about it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from litestar import Litestar
from litestar.config.cors import CORSConfig
from litestar.types import ControllerRouterHandler

from api.answer_cache import AnswerCache
from api.agent_sources import LocalAnswers
from api.error_handlers import EXCEPTION_HANDLERS, JsonPreflightRefusals
from api.mcp_server import McpEndpoint, mcp_route_handlers
from api.openapi import api_version
from api.reuse import flush_every
from api.routes import api_router
from api.service import Service, dependencies
from api.settings import load_settings
from api.site import site_route_handlers
from api.submission_desk import SubmissionDesk

log = logging.getLogger(__name__)

CORS = CORSConfig(
    allow_origins=["*"],
    allow_methods=["GET", "HEAD"],
    allow_headers=["If-None-Match"],
    expose_headers=["ETag", "X-Medbench-Warehouse", "Content-Length"],
    max_age=86400,
)


def create_app(
    data_dir: Path | None = None,
    public_url: str | None = None,
    reuse_flush_s: float = 1.0,
    extra_route_handlers: Sequence[ControllerRouterHandler] | None = None,
    desk: SubmissionDesk | None = None,
) -> AnswerCache:
    """The app; ``extra_route_handlers`` defaults to the website (``()`` serves the API alone). ``desk``
    turns the write routes on (``medbench serve`` builds it, validator included); without it the app is
    read-only and ``POST /v1/submissions`` answers 405."""
    if extra_route_handlers is None:
        extra_route_handlers = site_route_handlers()
    service = Service.create(load_settings(data_dir, public_url, reuse_flush_s), desk=desk)

    @contextlib.asynccontextmanager
    async def keep_reuses(_: Litestar) -> AsyncIterator[None]:
        flusher = asyncio.create_task(flush_every(service.reuses, service.settings.reuse_flush_s))
        try:
            yield
        finally:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
            try:
                service.reuses.flush()
            except OSError as exc:
                log.error("could not write the reuse store %s at shutdown: %s", service.reuses.path, exc)

    # MCP at /mcp: the same Service (tables, version, reuse counter) as /v1, the SDK's manager in the lifespan
    mcp = McpEndpoint(LocalAnswers(service), service.settings.public_url, service.store, api_version())
    app = Litestar(
        route_handlers=[api_router(), *mcp_route_handlers(mcp), *extra_route_handlers],
        dependencies=dependencies(service),
        openapi_config=None,
        exception_handlers=EXCEPTION_HANDLERS,
        cors_config=CORS,
        lifespan=[keep_reuses, mcp.lifespan],
        debug=False,
    )
    app.asgi_handler = JsonPreflightRefusals(app.asgi_handler)  # refused CORS preflights answer JSON too
    return AnswerCache(app, service)

