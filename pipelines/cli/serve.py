"""``medbench serve [--host] [--port] [--workers N]``: serve the published warehouse (read-only JSON API + downloads).

Only the parser is built at import time; uvicorn and Litestar are imported when the command runs,
so other commands never pay for them.
"""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve the published warehouse: the /v1 JSON API and predictions downloads",
        description="Serve the data directory's published warehouse (MEDBENCH_DATA) over HTTP: the read-only API and the "
        "submission routes (POST /v1/submissions; --read-only turns them off). "
        "Links in responses use MEDBENCH_PUBLIC_URL when set, else the address the request came to.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    parser.add_argument("--access-log", action="store_true",
                        help="log one line per request (off by default: it costs about a third of the throughput)")
    parser.add_argument("--workers", type=int, default=1,
                        help="server processes sharing the port (default: 1); the reuse count stays exact across them")
    parser.add_argument("--max-connections", type=int, default=None,
                        help="open connections per process before new ones get 503 server_busy "
                        "(default: 4096, or less under a lower open-file limit)")
    parser.add_argument("--max-connections-per-client", type=int, default=None,
                        help="open connections from one client address before its new ones get 503 server_busy "
                        "(default: 256; 0: no limit, e.g. behind a reverse proxy, where every client is the proxy)")
    parser.add_argument("--read-only", action="store_true",
                        help="serve no write routes: POST /v1/submissions answers 405 method_not_allowed "
                        "(by default submissions are accepted, docs/submitting.md)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import os

    from api.server import serve
    from pipelines.cli.submission_desk import READ_ONLY_ENV, build_desk

    read_only, workers = getattr(args, "read_only", False), getattr(args, "workers", 1)
    os.environ[READ_ONLY_ENV] = "1" if read_only else "0"  # for the workers' factory
    desk = None if read_only or workers > 1 else build_desk()
    serve(host=args.host, port=args.port, access_log=args.access_log, workers=workers,
          max_connections=getattr(args, "max_connections", None),
          max_connections_per_client=getattr(args, "max_connections_per_client", None),
          desk=desk, app_factory="pipelines.cli.submission_desk:create_app")
    return 0
