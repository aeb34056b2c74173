"""``medbench materialize [--demo] [--task T]... [--model M]... [--force]``.

Materialises through Dagster (the same assets, checks and run history as the UI), not around it:
inputs first, then one run per selected (task version, model) partition, then the publish.
Exit 0 when every selected partition ran, was reused, or was skipped as not runnable here (each
skip printed with its reason); 1 on any error.
"""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("materialize", help="materialise snapshots, evaluations and the published warehouse")
    p.add_argument("--demo", action="store_true", help="use the built-in generated demo data (real formats)")
    p.add_argument("--task", action="append", default=[], metavar="T", help="task slug or slug@version (repeatable)")
    p.add_argument("--model", action="append", default=[], metavar="M", help="model slug or provider id (repeatable)")
    p.add_argument("--force", action="store_true", help="re-run selected evaluations even if already evaluated")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.dagster.orchestrate import MaterializeError, materialize_selection

    try:
        report = materialize_selection(demo=args.demo, tasks=args.task, models=args.model, force=args.force)
    except MaterializeError as exc:
        print(f"medbench materialize: {exc}", file=sys.stderr)
        return 1
    print(report.render())
    return 0 if report.ok else 1
