"""What every handler of one app shares: settings, the current tables, the reuse counter.

One ``Service`` per app (tests run several apps in one process, each on its own data directory),
stored in ``app.state.medbench`` so that routes added later (the website) reach the same tables
through ``service_of(request)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from litestar import Litestar
from litestar.connection import ASGIConnection
from litestar.types import Scope

from api.errors import VERSION_SCOPE_KEY, warehouse_unavailable
from api.answer_cache import KEY_SCOPE_KEY, Answer
from api.responses import Prepared, Reply, request_origin, respond
from api.reuse import STORE_NAME, ReuseCounter
from api.settings import Settings
from api.tables import Tables, TableStore

STATE_KEY = "medbench"


@dataclass
class Service:
    settings: Settings
    store: TableStore
    reuses: ReuseCounter
    openapi: Prepared | None = field(default=None)  # built on first request

    @classmethod
    def create(cls, settings: Settings) -> Service:
        store = TableStore(settings.data, poll_s=settings.pointer_poll_s, cache_entries=settings.response_cache_entries)
        return cls(settings=settings, store=store, reuses=ReuseCounter(settings.data.state / STORE_NAME))

    def tables(self, scope: Scope) -> Tables:
        """The tables this request answers from (taken once); 503 while nothing is published."""
        tables = self.store.current()
        if tables is None:
            raise warehouse_unavailable()
        scope[VERSION_SCOPE_KEY] = tables.version  # type: ignore[literal-required]
        return tables

    def base_url(self, scope: Scope) -> str:
        return self.settings.public_url or request_origin(scope)

    def answered(self, scope: Scope, tables: Tables, answer: Answer | Prepared) -> None:
        """A handler's 200 answer, kept for replay (``api.answer_cache``) in the version it came from."""
        key = scope.get(KEY_SCOPE_KEY)
        if key is not None:
            tables.bodies.put(key, answer if isinstance(answer, Answer) else Answer(answer))

    def reply(self, scope: Scope, tables: Tables, answer: Answer) -> Reply:
        """An answer as it leaves, from the handler or from the answer cache: a GET of a lookup that
        found a result counts as a reuse (a 304 revalidation too; HEAD never)."""
        if answer.counts_reuse and scope["method"] == "GET":
            self.reuses.add()
        return respond(scope, answer.prepared, version=tables.version)


def service_of(source: ASGIConnection | Litestar) -> Service:
    app = source if isinstance(source, Litestar) else source.app
    return getattr(app.state, STATE_KEY)
