"""``medbench eval MODEL TASK --judge SLUG``: grade a model's stored answers on a task graded by a judge
model (a rubric task) with another judge, without calling the answering model (docs/adding-a-task.md,
"The rubric kind").

The answers are those of the pair's run by the task's own judge, which must exist in the data
directory (``medbench eval MODEL TASK`` first); the answering model's backend is replaced by one that
refuses to generate, so the command cannot call it even by mistake, and says so. The regrade has a run
id of its own (the judge is part of it), is published beside the original and is reached with
``?judge=SLUG`` on ``/v1/leaderboard`` and ``/v1/lookup``; the task's board stays its own judge's.
Rule one holds: a regrade already in the data directory is printed, not redone, unless ``--force``.
Exit codes as ``medbench eval``: 0 done or already done; 1 cannot run here (no stored answers, the
judge cannot run); 2 usage error (unknown judge, a task no judge grades, the task's own judge).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

from pipelines.cli.client import say


class AnsweringRefused(RuntimeError):
    """The regrade would have called the answering model (an answer was not stored)."""


class NoAnswering:
    """The answering model's backend, except that it refuses to generate: a regrade reads stored answers."""

    def __init__(self, backend: Any, model: str) -> None:
        self._backend, self._model = backend, model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def text_generator(self, *args: Any, **kwargs: Any) -> Any:
        raise AnsweringRefused(f"not every answer of {self._model} is stored; run `medbench eval {self._model} "
                               "TASK` without --judge first")


def _fail(message: str, code: int) -> int:
    print(f"medbench eval: {message}", file=sys.stderr)
    return code


def regrade(args: argparse.Namespace, specs: Any, task: Any, model: Any) -> int:
    from medbench.protocols import NotRunnable
    from pipelines.engine import evaluate as engine
    from pipelines.engine.release import publish_results
    from medbench.layout import DataDir

    data = DataDir()
    try:
        original = engine.resolve_evaluation(specs, data, task.ref, model.slug)
        ev = engine.resolve_evaluation(specs, data, task.ref, model.slug, judge=args.judge)
    except KeyError as exc:
        return _fail(str(exc.args[0]), 2)
    except ValueError as exc:
        return _fail(str(exc), 2)
    if ev.run_id == original.run_id:
        return _fail(f"{args.judge} is {task.ref}'s own judge: leave out --judge", 2)
    stored = engine.existing_result(data, original.run_id)
    if stored is None:
        return _fail(f"no stored answers of {model.slug} on {task.ref} in {data.root} (run {original.run_id}): "
                     f"run `medbench eval {model.slug} {task.ref}` first", 1)
    log = (lambda s: print(s, file=sys.stderr)) if args.json else (lambda s: say(args, s))
    done = engine.existing_result(data, ev.run_id)
    if done is not None and not args.force:
        return _report(args, done, original.run_id, ran=False)
    try:
        ev = replace(ev, backend=NoAnswering(ev.backend, model.slug))
        engine.make_predictions(ev, data, log)
        record = engine.compute_metrics(ev, specs, data, log)
        publish_results(specs, data, log)
    except AnsweringRefused as exc:
        return _fail(str(exc), 1)
    except NotRunnable as exc:
        return _fail(f"cannot regrade here: {exc}", 1)
    return _report(args, record, original.run_id, ran=True)


def _report(args: argparse.Namespace, record: Any, original: str, ran: bool) -> int:
    judging = record.usage.judging
    if args.json:
        import msgspec

        print(json.dumps({"status": "regraded" if ran else "already_regraded", "ran": ran, "answering_called": False,
                          "run_id": record.run_id, "answers_of": original, "judge": args.judge,
                          "result": msgspec.to_builtins(record)}, ensure_ascii=False, default=str))
        return 0
    p = record.primary
    verb = "regraded" if ran else "already regraded (rule one: nothing was run; --force regrades again)"
    print(f"{verb} {record.model.slug} on {record.task} with judge {args.judge}: run {record.run_id}, "
          f"{p.name} {p.value:.4f} [{p.ci_low:.4f}, {p.ci_high:.4f}]")
    print(f"no answering model was called: the {record.n} stored answers of run {original} were graded by "
          f"{args.judge} alone" + (f" ({judging.cost_usd:.4f} USD of judging)" if judging is not None else ""))
    print(f"the board of {record.task} stays its own judge's; this result: "
          f"/v1/leaderboard?task={record.task}&judge={args.judge}, /v1/compare?a={original}&b={record.run_id}")
    return 0
