"""``medbench score``: score a replay file locally against the gold labels, without publishing.

For model authors who ran their own model: before asking for a published result they can see
exactly how medbench reads each of their outputs (the parse status per item) and what score it
gives, with the same parser, metrics and bootstrap as the pipeline. Nothing is written to the
warehouse. Exit codes: 0 scored, 1 a bad outputs file or no snapshot yet, 2 usage error.

Its file name is shared on purpose: each ``medbench`` command's module is named after the command or
the noun it serves (docs/cli.md), whatever other package has a module of that name.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "score",
        help="score a replay file of raw outputs against the task's gold labels (nothing is published)",
        description=(
            'Score a JSONL file of {"instance_id", "output"} lines against the gold labels of the task\'s '
            "dataset snapshot in MEDBENCH_DATA, with the task's parser and metrics. Nothing is published."
        ),
    )
    parser.add_argument("--task", required=True, help="task as slug@version or slug (latest), e.g. clinicalqa@0")
    parser.add_argument(
        "--outputs", required=True, type=Path, help='JSONL file, one {"instance_id", "output"} per line'
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the text report")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from pipelines.backends.replay import ReplayError
    from pipelines.engine.snapshots import NotMaterialized, current_snapshot
    from pipelines.orchestration.plugins import specs as load_specs
    from medbench.layout import DataDir

    specs = load_specs()
    try:
        task = specs.task(args.task)
    except KeyError as exc:
        return _fail(2, str(exc.args[0]))
    fam = specs.family_of(task)
    if not fam.scores_replays:
        readers = sorted(t.ref for t in specs.tasks.values() if specs.family_of(t).scores_replays)
        return _fail(2, f"medbench score scores tasks answered in text ({', '.join(readers) or 'none here'}); "
                        f"{task.ref} is a {task.kind} task")
    data = DataDir()
    try:
        snapshot = current_snapshot(data, task.dataset)
    except NotMaterialized:
        snapshot = None
    if snapshot is None or not snapshot.path.exists():
        return _fail(
            1,
            f"no {task.dataset} snapshot in {data.root} (MEDBENCH_DATA); run `medbench materialize --task {task.ref}` "
            "first (add --demo for the demo data)",
        )
    try:
        score = fam.score_replay(task, snapshot.path, args.outputs)
    except ReplayError as exc:
        return _fail(1, str(exc))
    rows = score.rows
    if args.json:
        report = {
            "task": task.ref,
            "snapshot": snapshot.snapshot_id,
            "parser": score.parser_version,
            "n": score.n,
            "parse_status_counts": score.status_counts,
            "metrics": {m.name: {"value": m.value, "ci_low": m.ci_low, "ci_high": m.ci_high} for m in score.metrics},
            "items": rows,
        }
        print(json.dumps(report, ensure_ascii=False))
        return 0
    _print_report(task.ref, snapshot.snapshot_id, args.outputs, score, rows)
    return 0


def _print_report(task: str, snapshot: str, outputs: Path, score: Any, rows: list[dict[str, Any]]) -> None:
    print(f"{task} on snapshot {snapshot}, parser {score.parser_version}, outputs {outputs}")
    width = max(len("instance_id"), *(len(r["instance_id"]) for r in rows))
    print(f"{'instance_id':<{width}}  prediction  parse_status  correct")
    for r in rows:
        prediction = r["prediction"] if r["prediction"] is not None else "-"
        print(
            f"{r['instance_id']:<{width}}  {prediction:<10}  {r['parse_status']:<12}  {'yes' if r['correct'] else 'no'}"
        )
    print()
    counts = ", ".join(f"{status} {count}" for status, count in score.status_counts.items())
    print(f"n = {score.n}; parse status: {counts}")
    name_width = max(len(m.name) for m in score.metrics)
    for m in score.metrics:
        print(f"{m.name:<{name_width}}  {m.value:.4f}  95% CI [{m.ci_low:.4f}, {m.ci_high:.4f}]")


def _fail(code: int, message: str) -> int:
    print(f"medbench score: error: {message}", file=sys.stderr)
    return code
