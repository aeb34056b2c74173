"""Client commands: the read-only API from a shell (``medbench tasks``, ``leaderboard``, ``lookup``, ...).

One module registers all of them because they share everything but the route: ``--api-url``
(default ``$MEDBENCH_API_URL``, else the local server), ``--json`` (print the server's JSON as
is), and the exit codes of docs/cli.md ("The client"): 0 found, 1 not found (including a lookup answered
``not_evaluated``), 2 usage error (argparse, or the server's ``invalid_parameter``), 3 server
unreachable. Answers are decoded by ``api.client`` into the ``api.schemas`` Structs and turned back
into plain JSON for printing. Only httpx and msgspec are imported, and only when a command runs:
a look-up must not pay for Dagster.

Its file name is shared on purpose: each ``medbench`` command's module is named after the command or
the noun it serves (docs/cli.md), whatever other package has a module of that name.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

MODEL_TYPES = ("llm", "ml", "rule")
RELEASE_HELP = "answer as of this release (an id of GET /v1/releases; default: the current one)"


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
    common = common_options()

    def command(name: str, help_text: str, fn: Callable[[Any, argparse.Namespace], int]) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        p.set_defaults(func=lambda args: run(fn, args))
        return p

    command("tasks", "list the tasks (one line per version)", _tasks)
    command("datasets", "list the datasets with license and citation", _datasets)
    p = command("leaderboard", "ranked results of one task", _leaderboard)
    p.add_argument("task", help="slug@version, or slug for the latest version")
    p.add_argument("--model-type", choices=MODEL_TYPES, default=None)
    p.add_argument("--limit", type=int, default=None, help="at most this many rows (1..1000)")
    p.add_argument("--release", default=None, metavar="ID", help=RELEASE_HELP)
    p = command("result", "one result: metrics with CIs, versions, cost, BibTeX", _result)
    p.add_argument("run_id")
    p.add_argument("--release", default=None, metavar="ID", help=RELEASE_HELP)
    p = command("lookup", "rule one: has MODEL been evaluated on TASK? (exit 1 when not)", _lookup)
    p.add_argument("model", help="model slug (provider/name) or provider model id")
    p.add_argument("task", help="slug@version, or slug for the latest version")
    p.add_argument("--release", default=None, metavar="ID", help=RELEASE_HELP)
    p = command("predictions", "download a result's per-item predictions (sha256 checked)", _predictions)
    p.add_argument("run_id")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE", help="where to write the Parquet file")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    command("stats", "counts, total cost, reuses", _stats)
    p = command("models", "find models by name, slug or provider model id (exit 1 when none matches)", _models)
    p.add_argument("--q", default=None, help="case-insensitive substring of the name, slug or provider model id")
    p.add_argument("--type", choices=MODEL_TYPES, default=None)
    p.add_argument("--provider", default=None)
    p.add_argument("--limit", type=int, default=None, help="at most this many models (1..1000)")
    p.add_argument("--offset", type=int, default=None)
    p = command("compare", "paired comparison of two results of one task (a minus b)", _compare)
    p.add_argument("a", help="run id of the first result")
    p.add_argument("b", help="run id of the second result")


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


def _tasks(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli import client_text

    body = plain(client.tasks())
    show(args, body, client_text.tasks)
    return 0


def _datasets(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli import client_text

    body = plain(client.datasets())
    show(args, body, client_text.datasets)
    return 0


def _leaderboard(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli import client_text

    body = plain(client.leaderboard(args.task, args.model_type, args.limit, release=args.release))
    show(args, body, client_text.leaderboard)
    return 0


def _result(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli import client_text

    body = plain(client.result(args.run_id, release=args.release))
    show(args, body, client_text.result)
    return 0


def api_url_option(args: argparse.Namespace) -> str:
    """`` --api-url URL`` when this command was given one: a printed command runs as printed (issue #40)."""
    import shlex

    url = getattr(args, "api_url", None)
    return f" --api-url {shlex.quote(url)}" if url else ""


def _lookup(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli import client_text

    body = plain(client.lookup(args.model, args.task, release=args.release))
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


def _stats(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli import client_text

    body = plain(client.stats())
    show(args, body, client_text.stats)
    return 0


def _compare(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli import client_text

    body = plain(client.compare(args.a, args.b))
    if args.json:
        emit(body)
    else:
        a = plain(client.result(body['a']))
        b = plain(client.result(body['b']))
        print(client_text.comparison(body, a, b))
    return 0


def _models(client: Any, args: argparse.Namespace) -> int:
    from pipelines.cli import client_text

    body = plain(client.models(args.q, args.type, args.provider, args.limit, args.offset))
    show(args, body, client_text.models)
    return 0 if body["models"] else 1
