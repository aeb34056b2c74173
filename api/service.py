"""What every handler of one app shares: settings, the current tables, the reuse counter.

One ``Service`` per app (tests run several apps in one process, each on its own data directory).
Handlers reach it one way, Litestar's dependency injection: ``create_app`` registers it once at
app level as the dependency ``service`` (``dependencies``), and every ``/v1`` and website handler
declares a ``service: NamedDependency[Service]`` parameter (Litestar 2.23+ wants injected
parameters marked; the schema-only app behind the OpenAPI document registers the same
dependency). Code Litestar does not inject into (exception handlers, and ``medbench serve``'s
banner before the first request) reads that same registration with ``service_of``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from litestar import Litestar
from litestar.di import Provide
from litestar.types import Scope

from api.answer import Answer
from api.errors import VERSION_SCOPE_KEY, warehouse_unavailable
from api.responses import Prepared, Reply, link_origin, respond
from api.reuse import STORE_NAME, ReuseCounter
from api.settings import Settings
from api.submission_desk import SubmissionDesk
from api.tables import Tables, TableStore
from medbench.submissions import SubmissionStore

SERVICE = "service"  # the dependency's name: the parameter handlers declare


@dataclass
class Service:
    settings: Settings
    store: TableStore
    reuses: ReuseCounter
    openapi: Prepared | None = field(default=None)  # built on first request
    # the write routes' desk (``medbench serve`` hands it over; None: read-only, POST answers 405)
    desk: SubmissionDesk | None = field(default=None)

    @classmethod
    def create(cls, settings: Settings, desk: SubmissionDesk | None = None) -> Service:
        store = TableStore(settings.data, poll_s=settings.pointer_poll_s, cache_entries=settings.response_cache_entries)
        return cls(settings=settings, store=store, reuses=ReuseCounter(settings.data.state / STORE_NAME), desk=desk)

    @cached_property
    def submissions(self) -> SubmissionStore:
        """The submissions store the GET routes read (the desk's when writes are on; opened on first use)."""
        return self.desk.store if self.desk is not None else SubmissionStore.for_data(self.settings.data)

    def tables(self, scope: Scope) -> Tables:
        """The tables this request answers from (taken once); 503 while nothing is published."""
        tables = self.store.current()
        if tables is None:
            raise warehouse_unavailable(self.store.status.cause)
        scope[VERSION_SCOPE_KEY] = tables.version  # type: ignore[literal-required]
        return tables

    def base_url(self, scope: Scope) -> str:
        return link_origin(scope, self.settings.public_url)

    def reply(self, scope: Scope, tables: Tables, answer: Answer) -> Reply:
        """An answer as it leaves, from the handler or replayed by ``api.answer_cache``: a GET of a
        lookup that found a result counts as a reuse (a 304 revalidation too; HEAD never)."""
        if answer.counts_reuse and scope["method"] == "GET":
            self.reuses.add()
        return respond(scope, answer.prepared, version=tables.version)


def dependencies(service: Service) -> dict[str, Provide]:
    """The app-level dependency that hands ``service`` to every handler declaring a ``service`` parameter."""
    return {SERVICE: Provide(lambda: service, use_cache=True, sync_to_thread=False)}


def service_of(source: Any) -> Service:
    """The service registered with an app, for code outside injection: from a request or connection
    (``.app``), the Litestar app itself, or the outer ``AnswerCache`` (``.app`` is the Litestar app)."""
    app = source if isinstance(source, Litestar) else source.app
    return app.dependencies[SERVICE].dependency()
