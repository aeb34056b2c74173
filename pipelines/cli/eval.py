"""``medbench eval MODEL TASK [--force] [--demo] [--judge SLUG]``: rule one as a command.

1. Look the pair up in the API (``--api-url``). A published result is printed and the command
   stops (exit 0): nothing runs, nothing heavy is even imported.
2. The API cannot be reached: say so, then look in the local published warehouse of
   ``MEDBENCH_DATA``; a result there is printed and the command stops the same way.
3. Only when neither has the pair (or with ``--force``) is that one partition materialized
   locally through Dagster (inputs, predictions, metrics, publish: the same assets, checks and run
   history as ``medbench materialize`` and the UI), with Dagster's progress on stderr; the command
   then says where the result was published (run id, data directory, DuckDB file). Rule one also
   holds inside the pipeline: a finished run in the data directory is reused, not rerun, unless
   ``--force``.

``--judge SLUG`` (a task graded by a judge model): the pair's stored answers regraded by that judge,
the answering model not called (``pipelines.cli.regrade``); steps 1-2 look for that judge's result.

Whether the data directory holds demo or real results decides the data: ``--demo`` asks for demo data, and a data
directory that already holds demo results is evaluated on demo data. Exit codes: 0 a result exists
or was made; 1 the evaluation failed or cannot run here; 2 usage error (unknown model or task, a
model whose spec does not list the task, an ambiguous provider id, a data directory of the other
kind).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import TYPE_CHECKING, Any

from pipelines.cli.client import common_options, say

if TYPE_CHECKING:
    from pipelines.engine.specs import ModelSpec, TaskSpec


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval", parents=[common_options()],
        help="rule one as a command: print the published result of MODEL on TASK, or evaluate it locally if none",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help="model slug (provider/name) or provider model id")
    p.add_argument("task", help="slug@version, or slug for the latest version")
    p.add_argument("--force", action="store_true", help="evaluate locally even if a result is published")
    p.add_argument("--demo", action="store_true", help="evaluate on the built-in generated demo data")
    p.add_argument("--judge", metavar="SLUG", default=None,
                   help="a task graded by a judge model: regrade MODEL's stored answers with this judge instead "
                        "(the answering model is not called; pipelines/cli/regrade.py)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from api.client import ApiClient, NotFound, Unreachable, UsageError

    resolved = None
    judge = {"judge": args.judge} if args.judge else {}
    if not args.force:
        with ApiClient(args.api_url) as client:
            try:
                body = client.get("/v1/lookup", model=args.model, task=args.task, **judge)
            except UsageError as exc:
                print(f"medbench eval: {exc.message}", file=sys.stderr)
                return 2
            except NotFound as exc:
                say(args, f"the API at {client.base_url} does not know this task ({exc.message}); checking locally")
                body = None
            except Unreachable as exc:
                say(args, f"{exc.message}\nchecking the local published warehouse instead")
                resolved = _resolve(args)
                if isinstance(resolved, int):
                    return resolved
                if args.judge:  # a regrade: the data directory's own run of it is rule one's answer
                    return _regrade(args, resolved)
                _, task, model = resolved
                local = _local_published(args, task, model)
                if local is not None:
                    return _already(args, local, source="local warehouse")
                body = None
        if body is not None and body["status"] == "evaluated":
            return _already(args, body["result"], source=f"API {client.base_url}")
        if body is not None and body.get("withdrawn"):  # withdrawn, not missing: nothing to run (issue #40)
            with ApiClient(args.api_url) as client:
                return _withdrawn(args, client.get(f"/v1/results/{body['withdrawn'][-1]}"))
        if body is not None:
            say(args, f"not evaluated: no published result for {args.model} on {args.task}"
                f"{f' graded by {args.judge}' if args.judge else ''} at {client.base_url}")
    return _regrade(args, resolved) if args.judge else _evaluate(args, resolved)


def _regrade(args: argparse.Namespace, resolved=None) -> int:
    """Regrade the pair's stored answers with ``--judge`` (``pipelines.cli.regrade``)."""
    if resolved is None:
        resolved = _resolve(args)
    if isinstance(resolved, int):
        return resolved
    from pipelines.cli.regrade import regrade

    specs, task, model = resolved
    return regrade(args, specs, task, model)


def _already(args: argparse.Namespace, result: dict[str, Any], source: str) -> int:
    from pipelines.cli import client_text

    if args.json:
        print(json.dumps({"status": "already_evaluated", "source": source, "ran": False, "result": result},
                         ensure_ascii=False, default=str))
        return 0
    print(f"already evaluated ({source}): nothing was run (rule one). Reuse this result; --force evaluates again.\n")
    print(client_text.result(result, bibtex=False))
    return 0


def _withdrawn(args: argparse.Namespace, result: dict[str, Any]) -> int:
    from pipelines.cli import client_text

    if args.json:
        print(json.dumps({"status": "withdrawn", "ran": False, "result": result}, ensure_ascii=False, default=str))
    print(f"medbench eval: {client_text.withdrawn(result)}", file=sys.stderr)
    return 1


def _resolve(args: argparse.Namespace):
    """(specs, task, model) from the local specs, or an exit code for a usage error."""
    from pipelines.orchestration.plugins import specs as load_specs

    specs = load_specs()
    try:
        task, model = specs.task(args.task), specs.model(args.model)
    except KeyError as exc:
        print(f"medbench eval: {exc.args[0]}", file=sys.stderr)
        return 2
    if task.ref not in model.tasks:
        print(f"medbench eval: {model.slug} is not evaluated on {task.ref}: its spec lists {', '.join(model.tasks)}",
              file=sys.stderr)
        return 2
    return specs, task, model


def _local_published(args: argparse.Namespace, task: TaskSpec, model: ModelSpec) -> dict[str, Any] | None:
    """The pair's current result in the local published warehouse (as the API would show it), if any."""
    import msgspec

    from medbench.layout import DataDir, where
    from warehouse.read import NoWarehouse, current_result

    data = DataDir()
    try:
        found = current_result(data, model.slug, task.ref)
    except NoWarehouse:
        say(args, f"nothing is published {where(data.root)} yet")
        return None
    if found is None:
        say(args, f"no result for {model.slug} on {task.ref} in the local warehouse {where(data.root)}")
        return None
    record = msgspec.to_builtins(found.record)
    record.update(url=f"(local) {data.result_path(record['run_id'])}", superseded_by=found.superseded_by,
                  metric=record["metrics"][0], predictions_url=str(data.predictions_path(record["run_id"])), bibtex="")
    return record


def _evaluate(args: argparse.Namespace, resolved=None) -> int:
    """Materialize the pair locally; ``resolved`` is _resolve's answer when run() already has it."""
    if resolved is None:
        resolved = _resolve(args)
    if isinstance(resolved, int):
        return resolved
    _, task, model = resolved

    from pipelines.dagster.orchestrate import MaterializeError, materialize_selection
    from pipelines.engine.evaluate import existing_result
    from medbench.layout import DataDir

    data = DataDir()
    demo = args.demo or data.demo_or_real() == "demo"
    say(args, f"evaluating {model.slug} on {task.ref} locally through Dagster in {data.root}"
        f"{' on demo data' if demo else ''}{' (--force)' if args.force else ''}")
    try:
        with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
            report = materialize_selection(demo=demo, tasks=[task.ref], models=[model.slug], force=args.force, data=data)
    except MaterializeError as exc:
        print(f"medbench eval: {exc}", file=sys.stderr)
        return 2
    say(args, report.render())
    outcome = report.outcome(task.ref, model.slug)
    if outcome is None or outcome.status in ("failed", "skipped") or not report.ok:
        why = outcome.detail if outcome else "; ".join(report.errors) or "no evaluation ran"
        print(f"medbench eval: {model.slug} on {task.ref} was not evaluated: {why}", file=sys.stderr)
        return 1
    record = existing_result(data, outcome.run_id)
    from warehouse.withdrawals import withdrawals

    withdrawal = withdrawals(data).get(outcome.run_id)
    if withdrawal is not None:  # the pair's result was withdrawn: reused, never current (issue #40)
        return _withdrawn(args, {"run_id": outcome.run_id, "task": task.ref, "model": {"slug": model.slug},
                                 "withdrawn": {"date": str(withdrawal.date), "reason": withdrawal.reason}})
    where = {"status": outcome.status, "ran": outcome.status == "ran", "run_id": outcome.run_id,
             "data_dir": str(data.root), "duckdb": str(data.duckdb_link), "warehouse_version": report.version,
             "predictions": str(data.predictions_path(outcome.run_id)), "result_file": str(data.result_path(outcome.run_id))}
    if args.json:
        import msgspec

        print(json.dumps({**where, "result": msgspec.to_builtins(record)}, ensure_ascii=False, default=str))
        return 0
    p = record.primary if record else None
    print()
    print(f"{'evaluated' if outcome.status == 'ran' else 'reused'} {model.slug} on {task.ref}: run {outcome.run_id}"
          + (f", {p.name} {p.value:.4f} [{p.ci_low:.4f}, {p.ci_high:.4f}]" if p else ""))
    print(f"published in {data.root} as warehouse version {report.version}")
    print(f"  DuckDB file   {data.duckdb_link}")
    print(f"  predictions   {data.predictions_path(outcome.run_id)}")
    print(f"  result        {data.result_path(outcome.run_id)}")
    print(f"a server on this data directory (`medbench serve`) shows it at /r/{outcome.run_id} within a second")
    return 0
