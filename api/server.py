"""Run the service with uvicorn: one worker by default, ``--workers N`` for more processes.

Used by ``medbench serve`` and ``medbench demo``. Before serving it prints the website's address and
URLs worth trying, built from what is actually published (a real task, model and run id), so a
first-time user can open or paste them.

Several workers are safe because nothing they share lives in their memory: the warehouse is
read-only, and the reuse count is kept in one SQLite file under ``state/`` (``api.reuse``). Each
worker re-creates the app from the environment (``MEDBENCH_DATA``, ``MEDBENCH_PUBLIC_URL``,
``MEDBENCH_MAX_CONNECTIONS``, ``MEDBENCH_MAX_CONNECTIONS_PER_CLIENT``), which is why the arguments are put there before uvicorn starts.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from api.http_protocol import JsonErrorsHttpProtocol
from api.responses import TARGET_SCOPE_KEY
from api.tables import StoreStatus, Tables

if TYPE_CHECKING:
    from litestar import Litestar

    from api.submission_desk import SubmissionDesk

log = logging.getLogger(__name__)

KEEP_ALIVE_S = 5  # an idle kept-alive connection is closed after this (uvicorn's timeout_keep_alive)
GRACEFUL_SHUTDOWN_S = 10  # at shutdown, requests still running get this long before they are cancelled


def display_base(host: str, port: int) -> str:
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def example_urls(base: str, tables: Tables | None) -> list[str]:
    urls = [f"{base}/healthz", f"{base}/v1/stats", f"{base}/v1/datasets", f"{base}/v1/tasks"]
    if tables is not None and tables.tasks:
        task = tables.tasks[0]
        urls += [f"{base}/v1/tasks/{task.slug}", f"{base}/v1/leaderboard?task={task.ref}", f"{base}/v1/results?task={task.ref}"]
        board = tables.leaderboards.get(task.ref, ())
        if board:
            top = board[0].record
            # the provider's id is what agents know, unless several providers share it
            pid = top.model.provider_model_id
            model = pid if tables.resolve_model(pid) == (top.model.slug,) else top.model.slug
            urls += [
                f"{base}/v1/lookup?model={model}&task={task.ref}",
                f"{base}/v1/results/{top.run_id}",
                f"{base}/artifacts/{top.run_id}/predictions.parquet",
            ]
    urls.append(f"{base}/v1/openapi.json")
    return urls


def banner(base: str, tables: Tables | None, data_root: Path, workers: int = 1, status: StoreStatus | None = None) -> str:
    processes = f", {workers} worker processes" if workers > 1 else ""
    lines = [f"medbench API on {base} (data: {data_root}{processes})"]
    cause = status.cause if status is not None else None
    if tables is None and cause:
        lines.append(f"the published warehouse cannot be served ({cause}): /v1 answers 503 until a publish repairs it")
    elif tables is None:
        lines.append(f"nothing is published in {data_root} yet (choose another directory with MEDBENCH_DATA=DIR): "
                     "/v1 answers 503 until `medbench materialize` (or `medbench demo`) has published there")
    else:
        kind = "demo results (generated data)" if tables.demo else "results"
        lines.append(f"serving warehouse {tables.version}: {len(tables.results)} {kind}")
        if cause:
            lines.append(f"warning: {cause}; serving the newest kept version that loads until a publish repairs it")
    lines.append(f"website: open {base}/ in a browser (leaderboards, results, comparisons; /agents for agents)")
    # The CLI's client commands ask MEDBENCH_API_URL (else :8000): the line to paste in another shell.
    lines.append(f"export MEDBENCH_API_URL={base}   # for medbench's client commands in another shell")
    lines.append("try:")
    lines += [f"  curl '{url}'" for url in example_urls(base, tables)]
    return "\n".join(lines)


def serve(host: str = "127.0.0.1", port: int = 8000, data_dir: Path | None = None, public_url: str | None = None,
          access_log: bool = False, workers: int = 1, max_connections: int | None = None,
          max_connections_per_client: int | None = None, desk: SubmissionDesk | None = None,
          app_factory: str = "api.app:create_app") -> None:
    """``desk`` turns the write routes on for one worker; with several, each worker builds its app with
    ``app_factory`` (an import path: the composition root's, which builds a desk per worker)."""
    from api.http_protocol import MAX_CONNECTIONS_ENV, PER_CLIENT_ENV
    from api.settings import PUBLIC_URL_ENV
    from medbench.layout import DATA_ENV, DataDir

    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if max_connections is not None:
        os.environ[MAX_CONNECTIONS_ENV] = str(max_connections)
    if max_connections_per_client is not None:
        if max_connections_per_client < 0:
            raise ValueError(f"--max-connections-per-client must be 0 (no limit) or more, got {max_connections_per_client}")
        os.environ[PER_CLIENT_ENV] = str(max_connections_per_client)
    if workers == 1:
        from api.app import create_app
        from api.service import service_of

        app = create_app(data_dir=data_dir, public_url=public_url, desk=desk)
        service = service_of(app)
        base = service.settings.public_url or display_base(host, port)
        tables = service.store.current()
        print(banner(base, tables, service.settings.data.root, status=service.store.status), flush=True)
        run_app(app, host, port, access_log=access_log)
        return
    from api.settings import load_settings
    from api.tables import TableStore

    # the workers build their own app from the environment; this process only supervises them
    settings = load_settings(data_dir, public_url)
    os.environ[DATA_ENV] = str(settings.data.root)
    os.environ[PUBLIC_URL_ENV] = settings.public_url or ""
    base = settings.public_url or display_base(host, port)
    store = TableStore(DataDir(settings.data.root))
    print(banner(base, store.current(), settings.data.root, workers, status=store.status), flush=True)
    run_app(app_factory, host, port, access_log=access_log, workers=workers, factory=True)


class KeepsAbsoluteTarget:
    """For uvicorn's httptools protocol, which keeps only the path of an absolute-form request target
    (``GET http://a.example/v1/x HTTP/1.1``): leaves the whole target in the scope, so that the app can
    refuse a Host the target contradicts (``api.responses.host_conflict``). Origin-form targets, nearly
    every request, add nothing. A mixin, placed before the protocol class."""

    url: bytes
    scope: dict

    def on_headers_complete(self) -> None:
        if self.url[:1] != b"/" and b"://" in self.url:
            self.scope[TARGET_SCOPE_KEY] = bytes(self.url)
        super().on_headers_complete()  # type: ignore[misc]


class ServedHttpProtocol(KeepsAbsoluteTarget, JsonErrorsHttpProtocol):  # type: ignore[misc,valid-type]
    """The protocol ``run_app`` serves with (httptools): a module-level class, as ``--workers`` pickles it."""


def run_app(app: Litestar | str, host: str, port: int, access_log: bool = False, workers: int = 1,
            factory: bool = False) -> None:
    """uvicorn as the service runs: JSON even for requests the HTTP parser refuses, and the limits of
    ``api.http_protocol`` (header size, slow and idle clients, the connection cap).

    uvicorn's line per request is off by default (errors and warnings are still logged): it is about a
    third of the cost of a cached answer (``bench.api_load --access-log`` measures it); a reverse proxy
    in front usually keeps the access log anyway. ``medbench serve --access-log`` turns it on.
    """
    import uvicorn

    from api.http_protocol import LIMITED, raise_open_file_limit

    raise_open_file_limit()  # before the workers start: they inherit it
    if not LIMITED:
        log.warning("httptools is not installed: serving with h11, without the header, timeout and connection limits")
    protocol = ServedHttpProtocol if LIMITED else JsonErrorsHttpProtocol
    uvicorn.run(app, host=host, port=port, workers=workers, factory=factory, log_level="info", access_log=access_log,
                http=protocol, timeout_keep_alive=KEEP_ALIVE_S,
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)
