"""The ``medbench`` command.

Each subcommand lives in its own module under ``pipelines.cli`` exposing
``add_parser(subparsers)`` (which sets ``func``) and importing anything heavy only inside its
``run``: a client command such as ``medbench lookup`` must not pay for importing Dagster. One
module may register several subcommands (``client`` registers all the read-only API commands).
Exit codes follow CONTRACT.md (argparse's own usage errors exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS = ["materialize", "serve", "demo", "score", "client", "eval", "reproduce", "mcp_command"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="medbench", description="medbench: evaluate once, publish with CIs.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"pipelines.cli.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `medbench leaderboard ... | head` closed our stdout: not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
