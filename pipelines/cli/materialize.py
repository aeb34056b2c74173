"""``medbench materialize [--demo] [--task T]... [--model M]... [--force] [--jobs N] [--dry-run] [--max-cost USD] [--lock-wait S]``.

Materializes through Dagster (the same assets, checks and run history as the UI), not around it:
inputs (when not already current), rule one for every selected partition before any run (reuses
reported at once), the partitions that need work as concurrent runs bounded by ``--jobs`` and the
pool limits of dagster.yaml, then the publish. Exit 0 when every selected partition ran, was
reused, or was skipped as not runnable here (each skip printed with its reason); 1 on any error
(each failed step's root cause printed on one line); 130 when stopped by Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("materialize", help="materialize snapshots, evaluations and the published warehouse")
    p.add_argument("--demo", action="store_true", help="use the built-in generated demo data (real formats)")
    p.add_argument("--task", action="append", default=[], metavar="T", help="task slug or slug@version (repeatable)")
    p.add_argument("--model", action="append", default=[], metavar="M", help="model slug or provider id (repeatable)")
    p.add_argument("--force", action="store_true", help="re-run selected evaluations even if already evaluated")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="evaluations run at once (default: max_concurrent_runs of dagster.yaml, 4)")
    p.add_argument("--pool", action="append", default=[], metavar="NAME=N",
                   help="override a pool's limit for this invocation, e.g. --pool gpu=1 (repeatable)")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would run, be reused or be skipped, with estimated costs; start nothing")
    p.add_argument("--max-cost", type=float, default=None, metavar="USD",
                   help="refuse to start when the evaluations to run are estimated above USD")
    p.add_argument("--refresh-inputs", action="store_true",
                   help="rematerialize snapshots and instances even when they look current")
    p.add_argument("--lock-wait", type=float, default=None, metavar="S",
                   help="when another process is evaluating a selected partition, wait up to S seconds for it, "
                        "then reuse its result (default: MEDBENCH_PARTITION_WAIT_S, else 600)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.dagster.orchestrate import MaterializeError, dry_run_selection, materialize_selection

    if args.jobs is not None and args.jobs < 1:
        print("medbench materialize: --jobs must be at least 1", file=sys.stderr)
        return 2
    if args.lock_wait is not None and not args.lock_wait >= 0:
        print("medbench materialize: --lock-wait must be a number of seconds, 0 or more", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a kill stops like Ctrl-C
    try:
        if args.dry_run:
            print(dry_run_selection(demo=args.demo, tasks=args.task, models=args.model, force=args.force))
            return 0
        report = materialize_selection(demo=args.demo, tasks=args.task, models=args.model, force=args.force,
                                       jobs=args.jobs, max_cost=args.max_cost, pools=args.pool,
                                       refresh_inputs=args.refresh_inputs, lock_wait_s=args.lock_wait)
    except MaterializeError as exc:
        print(f"medbench materialize: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("medbench materialize: interrupted before any evaluation started", file=sys.stderr)
        return 130
    print(report.render(), flush=True)
    if report.interrupted:
        sys.stderr.flush()
        os._exit(130)  # worker threads still inside a stopped run are not waited for
    return 0 if report.ok else 1
