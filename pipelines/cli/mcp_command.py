"""``medbench mcp``: the MCP server over stdio, for agents that start their tools as subprocesses.

With ``--api-url`` (default ``$MEDBENCH_API_URL``) it answers by asking that medbench server's
``/v1`` (``api.client``): nothing but httpx is needed, and reuses count on that server. With
``--data DIR`` it answers from a local data directory's published warehouse, through the same
``Service`` as ``medbench serve`` (reuses counted in that directory's shared store). The tools
are the ones ``/mcp`` serves over HTTP (``api.agent_tools``). stdout carries the protocol, so
every message for people goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="serve the MCP tools over stdio (lookup, leaderboard, ...)",
                       description="Serve medbench's read-only MCP tools over stdin/stdout.")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--api-url", default=None, metavar="URL",
                       help="medbench API to ask (default: $MEDBENCH_API_URL, else http://127.0.0.1:8000)")
    where.add_argument("--data", type=Path, default=None, metavar="DIR",
                       help="answer from this local data directory instead of a server")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import anyio

    from api.mcp_server import serve_stdio
    from api.openapi import api_version

    if args.data is not None:
        return anyio.run(_serve_local, args.data)
    from api.agent_sources import RemoteAnswers
    from api.client import ApiClient

    with ApiClient(args.api_url) as client:
        print(f"medbench mcp: answering from {client.base_url}", file=sys.stderr)
        anyio.run(serve_stdio, RemoteAnswers(client), api_version())
    return 0


async def _serve_local(data: Path) -> int:
    import contextlib

    import anyio

    from api.agent_sources import LocalAnswers
    from api.mcp_server import serve_stdio
    from api.openapi import api_version
    from api.reuse import flush_every
    from api.service import Service
    from api.settings import load_settings

    service = Service.create(load_settings(data, None, 1.0))
    print(f"medbench mcp: answering from {service.settings.data.root}", file=sys.stderr)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(flush_every, service.reuses, service.settings.reuse_flush_s)
            await serve_stdio(LocalAnswers(service), api_version())
            tg.cancel_scope.cancel()
    finally:
        with contextlib.suppress(OSError):
            service.reuses.flush()
    return 0
