"""``medbench demo``: materialize everything on the built-in demo data, print the leaderboards,
then serve the API and the site from it (the README's first command ends here).

Its file name is shared on purpose: each ``medbench`` command's module is named after the command or
the noun it serves (docs/cli.md), whatever other package has a module of that name.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="materialize the demo data, then serve it")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--no-serve", action="store_true", help="stop after materializing and printing the leaderboards")
    p.set_defaults(func=run)


def site_url(host: str, port: int) -> str:
    """The address a browser on this machine reaches ``host:port`` at (a wildcard bind is loopback)."""
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}"


def run(args: argparse.Namespace) -> int:
    from pipelines.cli.leaderboards import render_leaderboards
    from pipelines.dagster.assets.evaluation_records import SITE_URL_ENV
    from pipelines.dagster.orchestrate import MaterializeError, materialize_selection
    from medbench.layout import DATA_ENV, DataDir, data_root

    # The one default data directory (``./data``, or MEDBENCH_DATA), as every other command: what the
    # demo materializes is what `medbench sql`, `tokens create` or `serve` then find (docs/concepts.md).
    os.environ[DATA_ENV] = str(data_root())
    # The result_page links of what is materialized here point at the port served below (unless
    # MEDBENCH_PUBLIC_URL says where the site really is): `pipelines/dagster/assets/evaluation_records.py`.
    os.environ[SITE_URL_ENV] = site_url(args.host, args.port)
    data = DataDir()
    log_path = data.root / "logs" / "demo.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    print(f"materializing the demo in {data.root} (a few minutes; Dagster's log: {log_path})", flush=True)
    try:
        # The summary is the demo's output; Dagster's run lines go to the log file (docs/cli.md).
        with open(log_path, "a", encoding="utf-8") as log, contextlib.redirect_stdout(log), \
                contextlib.redirect_stderr(log):
            report = materialize_selection(demo=True, data=data)
    except MaterializeError as exc:
        print(f"medbench demo: {exc} (Dagster's log: {log_path})", file=sys.stderr)
        return 1
    print(report.render())
    print(f"Dagster's log of this materialization: {log_path}")
    if not report.ok:
        return 1
    print()
    print(render_leaderboards(data))
    print(f"\nDuckDB file for analysts: {data.duckdb_link}")
    if args.no_serve:
        port = "" if args.port == 8000 else f" --port {args.port}"
        host = "" if args.host == "127.0.0.1" else f" --host {args.host}"
        print(f"serve it: medbench serve{host}{port}")
        print(f"export MEDBENCH_API_URL={site_url(args.host, args.port)}   # for medbench's client commands")
        return 0
    from api.server import serve
    from pipelines.cli.demo_endpoint import ENDPOINT, demo_endpoint
    from pipelines.cli.submission_desk import build_desk

    # Demo data accepts submissions; an openai model may name the loopback endpoint started here
    # (it answers as a simulated LLM, and stops with the demo).
    with demo_endpoint(data) as url:
        print(f"submission endpoint {ENDPOINT!r} (a simulated LLM) at {url}")
        serve(args.host, args.port, data_dir=data.root, desk=build_desk(data.root))
    return 0
