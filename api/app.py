"""``create_app``: the read-only medbench service as one Litestar app.

Wires the pieces together and nothing else: settings, the per-version tables, the reuse counter
(flushed by a lifespan task), the routes, JSON errors everywhere, CORS for GET/HEAD from any
origin, and the website (``api.site``) unless ``extra_route_handlers`` says otherwise: its handlers
reach the same tables with ``api.service.service_of(request)``. The one addition to Litestar is
``MedbenchApp.__call__``: repeats of answered hot requests are replayed before routing (``api.answer_cache``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from litestar import Litestar
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.types import ControllerRouterHandler, Receive, Scope, Send

from api.answer_cache import KEY_SCOPE_KEY, replay_key
from api.errors import EXCEPTION_HANDLERS
from api.reuse import flush_every
from api.routes import api_router
from api.service import STATE_KEY, Service
from api.settings import load_settings
from api.site import site_route_handlers

log = logging.getLogger(__name__)

CORS = CORSConfig(
    allow_origins=["*"],
    allow_methods=["GET", "HEAD"],
    allow_headers=["If-None-Match"],
    expose_headers=["ETag", "X-Medbench-Warehouse", "Content-Length"],
    max_age=86400,
)


class MedbenchApp(Litestar):
    """Litestar, except that a request answered before in this version is replayed without routing."""

    medbench: Service  # set by create_app; also in app.state for handlers added later

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # type: ignore[override]
        key = replay_key(scope)
        if key is not None:
            service = self.medbench
            tables = service.store.current()
            if tables is not None:
                answer = tables.bodies.get(key)
                if answer is not None:
                    await service.reply(scope, tables, answer)(scope, receive, send)
                    return
                scope[KEY_SCOPE_KEY] = key  # type: ignore[literal-required]  # the handler may store its answer
        await super().__call__(scope, receive, send)  # type: ignore[arg-type]


def create_app(
    data_dir: Path | None = None,
    public_url: str | None = None,
    reuse_flush_s: float = 1.0,
    extra_route_handlers: Sequence[ControllerRouterHandler] | None = None,
) -> MedbenchApp:
    """The app; ``extra_route_handlers`` defaults to the website (``()`` serves the API alone)."""
    if extra_route_handlers is None:
        extra_route_handlers = site_route_handlers()
    service = Service.create(load_settings(data_dir, public_url, reuse_flush_s))

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

    app = MedbenchApp(
        route_handlers=[api_router(service), *extra_route_handlers],
        openapi_config=None,
        exception_handlers=EXCEPTION_HANDLERS,
        cors_config=CORS,
        lifespan=[keep_reuses],
        state=State({STATE_KEY: service}),
        debug=False,
    )
    app.medbench = service
    return app

