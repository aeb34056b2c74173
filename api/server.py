"""Run the service with uvicorn (one worker: the reuse counter and the table cache are per process).

Used by ``medbench serve`` and ``medbench demo``. Before serving it prints URLs worth trying, built
from what is actually published (a real task, model and run id), so a first-time user can paste them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from api.tables import Tables

if TYPE_CHECKING:
    from litestar import Litestar


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


def banner(base: str, tables: Tables | None, data_root: Path) -> str:
    lines = [f"medbench API on {base} (data: {data_root})"]
    if tables is None:
        lines.append("nothing is published there yet: /v1 answers 503 until `medbench materialize --demo` has run")
    else:
        kind = "demo results (generated data)" if tables.demo else "results"
        lines.append(f"serving warehouse {tables.version}: {len(tables.results)} {kind}")
    lines.append("try:")
    lines += [f"  curl '{url}'" for url in example_urls(base, tables)]
    return "\n".join(lines)


def serve(host: str = "127.0.0.1", port: int = 8000, data_dir: Path | None = None, public_url: str | None = None,
          access_log: bool = False) -> None:
    from api.app import create_app
    from api.service import service_of

    app = create_app(data_dir=data_dir, public_url=public_url)
    service = service_of(app)
    base = service.settings.public_url or display_base(host, port)
    print(banner(base, service.store.current(), service.settings.data.root), flush=True)
    run_app(app, host, port, access_log=access_log)


def run_app(app: Litestar, host: str, port: int, access_log: bool = False) -> None:
    """uvicorn as the service runs: one worker, and JSON even for requests the HTTP parser refuses.

    uvicorn's line per request is off by default (errors and warnings are still logged): it is about a
    third of the cost of a cached answer (``bench.api_load --access-log`` measures it); a reverse proxy
    in front usually keeps the access log anyway. ``medbench serve --access-log`` turns it on.
    """
    import uvicorn

    from api.http_protocol import JsonErrorsHttpProtocol

    uvicorn.run(app, host=host, port=port, workers=1, log_level="info", access_log=access_log, http=JsonErrorsHttpProtocol)
