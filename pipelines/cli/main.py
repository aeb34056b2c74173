"""The ``medbench`` command.

Each subcommand lives in its own module under ``pipelines.cli`` exposing
``add_parser(subparsers)`` (which sets ``func``) and importing anything heavy only inside its
``run``: a client command such as ``medbench lookup`` must not pay for importing Dagster. One
module may register several subcommands (``client`` registers all the read-only API commands).
Exit codes follow docs/cli.md, "The client" (argparse's own usage errors exit 2). An error that reaches here is
printed as one line (``pipelines.cli.errors``): spec and input errors exit 2, anything else 1;
``--debug`` (anywhere on the command line) shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS = ["materialize", "serve", "demo", "ui", "score", "client", "eval", "reproduce", "mcp_command", "sql",
            "submissions", "official", "withdraw", "verify", "log"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="medbench", description="medbench: evaluate once, publish with CIs.")
    parser.add_argument("--debug", action="store_true", help="on an error, show the full traceback")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"pipelines.cli.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    args = build_parser().parse_args([a for a in argv if a != "--debug"])
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError as exc:
        if _stdout_closed():
            # `medbench leaderboard ... | head` closed our stdout: not an error of ours.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        return _failed(exc, debug)  # another pipe (a socket, a child process): a real error
    except Exception as exc:
        return _failed(exc, debug)


def _stdout_closed() -> bool:
    """Whether our stdout is a pipe whose reader has gone (poll says POLLERR on its write end)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _failed(exc: BaseException, debug: bool) -> int:
    if debug:
        raise exc
    from pipelines.cli.errors import describe

    code, line = describe(exc)
    print(line, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
