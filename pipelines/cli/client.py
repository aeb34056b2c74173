"""Client commands: the read-only API from a shell (``medbench tasks``, ``leaderboard``, ``lookup``, ...).

The commands are derived from the table of read questions (``api.questions``: a question's ``cli``
names the command and each parameter's ``CliArg`` how it is given); this module adds how each prints.
One module registers all of them because they share everything but the route: ``--api-url``
(default ``$MEDBENCH_API_URL``, else the local server), ``--json`` (print the server's JSON as
is), and the exit codes of docs/cli.md ("The client"): 0 found, 1 not found (including a lookup answered
``not_evaluated``), 2 usage error (argparse, or the server's ``invalid_parameter``), 3 server
unreachable. Answers are decoded by ``api.client`` into the ``api.schemas`` Structs and turned back
into plain JSON for printing. Building the parser reads the table (``api.questions``: msgspec and
``api.schemas``, no Litestar); httpx is imported only when a command runs: a look-up must not pay
for Dagster.

Its file name is shared on purpose: each ``medbench`` command's module is named after the command or
the noun it serves (docs/cli.md), whatever other package has a module of that name.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any


def common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--api-url", default=None, metavar="URL",
                        help="medbench API to ask (default: $MEDBENCH_API_URL, else http://127.0.0.1:8000)")
    common.add_argument("--json", action="store_true", help="print the server's JSON instead of text")
    return common


def say(args: argparse.Namespace, text: str) -> None:
    """Narration: stdout for people, stderr under --json (stdout then holds one JSON object)."""
    print(text, file=sys.stderr if args.json else sys.stdout, flush=True)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """One command per read question that declares one (``api.questions``: its name, help and the
    parameters it takes, positional or ``--flag``), then ``predictions``, which downloads a file."""
    from api.questions import registered

    common = common_options()

    def command(name: str, help_text: str, fn: Callable[[Any, argparse.Namespace], int]) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        p.set_defaults(func=lambda args: run(fn, args))
        return p

    for question in sorted((q for q in registered() if q.cli is not None), key=lambda q: q.cli.order):
        p = command(question.cli.command, question.cli.help, partial(_ask, question))
        for param in question.params:
            if param.cli is None:
                continue
            spec = param.cli
            options = {k: v for k, v in (("help", spec.help), ("choices", spec.choices), ("type", spec.type),
                                         ("metavar", spec.metavar)) if v is not None}
            if spec.flag is None:
                p.add_argument(param.attr, **options)
            else:
                p.add_argument(spec.flag, dest=param.attr, default=None, **options)
        if question.cli.command == "lookup":
            p = command("predictions", "download a result's per-item predictions (sha256 checked)", _predictions)
            p.add_argument("run_id")
            p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE",
                           help="where to write the Parquet file")
            p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _ask(question: Any, client: Any, args: argparse.Namespace) -> int:
    """Ask ``question`` with the parameters this command takes (the rest: the server's defaults) and
    print the answer its way (``PRINTERS``), or as JSON for a question without a printer."""
    given = {p.attr: getattr(args, p.attr) for p in question.params if p.cli is not None}
    body = plain(getattr(client, question.client)(**given))
    printer = PRINTERS.get(question.cli.command)
    if printer is None:
        emit(body)
        return 0
    return printer(client, args, body)


def run(fn: Callable[[Any, argparse.Namespace], int], args: argparse.Namespace) -> int:
    from api.client import ApiClient, ClientError

    with ApiClient(args.api_url) as client:
        try:
            return fn(client, args)
        except ClientError as exc:
            if args.json and exc.body is not None:
                emit(exc.body)
            print(f"medbench {args.command}: {exc.message}", file=sys.stderr)
            return exc.exit_code


def plain(struct: Any) -> Any:
    """A decoded answer as the JSON it came as (dicts, lists, ISO dates), for ``--json`` and ``client_text``."""
    import msgspec

    return msgspec.to_builtins(struct)


def emit(body: Any) -> None:
    print(json.dumps(body, ensure_ascii=False))


def show(args: argparse.Namespace, body: Any, as_text: Callable[[Any], str]) -> None:
    if args.json:
        emit(body)
    else:
        print(as_text(body))


def _shown(as_text: str) -> Callable[[Any, argparse.Namespace, Any], int]:
    """A printer showing the body as ``client_text.<as_text>`` (or JSON); exit 0."""
    def printer(client: Any, args: argparse.Namespace, body: Any) -> int:
        from pipelines.cli import client_text

        show(args, body, getattr(client_text, as_text))
        return 0
    return printer


def api_url_option(args: argparse.Namespace) -> str:
    """`` --api-url URL`` when this command was given one: a printed command runs as printed (issue #40)."""
    import shlex

    url = getattr(args, "api_url", None)
    return f" --api-url {shlex.quote(url)}" if url else ""


def _lookup(client: Any, args: argparse.Namespace, body: Any) -> int:
    from pipelines.cli import client_text

    if args.json:
        emit(body)
    elif body["status"] == "evaluated":
        print("evaluated: reuse this result instead of running it again\n")
        print(client_text.result(body["result"]))
    elif body.get("withdrawn"):
        print(client_text.withdrawn(plain(client.result(body["withdrawn"][-1], release=args.release))))
    else:
        print(f"not evaluated: {args.model} on {args.task} has no published result. "
              f"`medbench eval {args.model} {args.task}{api_url_option(args)}` evaluates it locally.")
    return 0 if body["status"] == "evaluated" else 1


def _predictions(client: Any, args: argparse.Namespace) -> int:
    result = client.result(args.run_id)
    run_id = result.run_id
    bar = None

    def progress(total: int | None) -> Callable[[int], None]:
        nonlocal bar
        from tqdm import tqdm

        bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=f"{run_id} predictions",
                   file=sys.stderr, disable=args.no_progress)
        return bar.update

    try:
        size, sha = client.download(f"/artifacts/{run_id}/predictions.parquet", args.output,
                                    result.predictions_sha256, progress)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        emit({"run_id": run_id, "path": str(args.output), "bytes": size, "sha256": sha, "verified": True})
    else:
        print(f"wrote {args.output} ({size} bytes); sha256 {sha} matches the published checksum")
    return 0


def _compare(client: Any, args: argparse.Namespace, body: Any) -> int:
    from pipelines.cli import client_text

    if args.json:
        emit(body)
    else:
        a = plain(client.result(body['a']))
        b = plain(client.result(body['b']))
        print(client_text.comparison(body, a, b))
    return 0


def _models(client: Any, args: argparse.Namespace, body: Any) -> int:
    _shown("models")(client, args, body)
    return 0 if body["models"] else 1


# How each command prints its answer (text for people, the JSON under --json) and the exit code it
# returns; a question's command without one prints the JSON.
PRINTERS: dict[str, Callable[[Any, argparse.Namespace, Any], int]] = {
    "tasks": _shown("tasks"), "datasets": _shown("datasets"), "leaderboard": _shown("leaderboard"),
    "result": _shown("result"), "lookup": _lookup, "stats": _shown("stats"), "compare": _compare, "models": _models,
}
