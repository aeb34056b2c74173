"""The generic solvers: how any family's problem is answered by any backend that answers its shape.

A family says *what* is asked (``TaskFamily.problem``); these say *how* it is run, the same for
every family, so a new family is a declaration and a new backend serves every family of its shape:

- ``TextChoice``: prompts -> raw text stored under a generation key -> the family's parser. The
  key holds the model, its settings (defaults omitted), the prompt template's hash, the decoding
  and the snapshot, so the stored outputs are reused (and a run resumes where it stopped) exactly
  while none of those changed.
- ``FitAndScore``: the backend's window scorer is fitted on train (tuned on validation), then
  scores test; the family turns the scores into its predictions table, and where it declares a
  ``finish`` it is handed the validation scores too (e.g. to fit a recalibration on them) and
  returns the table's metadata and what the config records.
- any other shape (``medbench.protocols.Problem``): a problem that solves itself, so a plug-in
  kind's problem (a regression's fit-and-predict) needs no edit here: its ``solve`` asks the
  evaluation's backend what it needs and returns the ``Predicted``.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import msgspec
import numpy as np

from medbench.canonical import spec_builtins
from medbench.evaluation import Evaluation
from medbench.outcomes import Log, Predicted, Usage
from medbench.protocols import FitAndScore, Problem, TextChoice
from pipelines.engine.generations import GenerationStore, generation_key
from medbench.layout import DataDir


def solve(ev: Evaluation, instances: Path, data: DataDir, log: Log) -> Predicted:
    """Run (or resume, or replay) the evaluation's model on the problem its family declares."""
    problem = ev.family.problem(ev, instances)
    if isinstance(problem, TextChoice):
        return solve_text_choice(ev, problem, data, log)
    if isinstance(problem, FitAndScore):
        return solve_fit_and_score(ev, problem, log)
    if isinstance(problem, Problem):
        return problem.solve(ev, data, log)
    raise TypeError(f"family {ev.family.name!r} declared a {type(problem).__name__}: not a TextChoice or "
                    "FitAndScore, and it has no solve(ev, data, log) of its own (medbench.protocols.Problem)")


def solve_text_choice(ev: Evaluation, problem: TextChoice, data: DataDir, log: Log) -> Predicted:
    decoding = {"max_new_tokens": ev.backend.max_new_tokens(ev.model, problem.max_new_tokens),
                "temperature": problem.temperature}
    key = generation_key({
        "model": ev.model.slug, "revision": ev.model.revision, "backend": ev.model.backend,
        "settings": spec_builtins(ev.model.settings), "prompt_hash": problem.prompt_hash, "decoding": decoding,
        "snapshot": ev.snapshot_id,
    })
    store = GenerationStore(data.generations(key))
    already = len(store.load())
    if already:
        log(f"{ev.partition_key}: {already}/{len(problem.prompts)} outputs already stored under generation {key}; "
            "resuming")
    generator = ev.backend.text_generator(ev.model, data, max_new_tokens=decoding["max_new_tokens"],
                                          options=problem.options)
    usage = generator.generate(problem.prompts, store, log)
    outputs = {iid: g.output for iid, g in store.load().items()}
    config = {
        "decoding": decoding, "prompt_hash": problem.prompt_hash, **problem.config,
        "backend": ev.model.backend, "backend_settings": ev.backend.published(ev.model.settings),
        "bootstrap": msgspec.to_builtins(ev.task.bootstrap),
        "intervals": msgspec.to_builtins(ev.task.intervals),
    }
    return Predicted(table=problem.parse(outputs), usage=asdict(usage), config=config, generation_key=key)


def solve_fit_and_score(ev: Evaluation, problem: FitAndScore, log: Log) -> Predicted:
    started = time.monotonic()
    scorer = ev.backend.window_scorer(ev.model, problem.step_seconds)
    (train_x, train_y), (val_x, val_y) = problem.train, problem.validation
    log(f"{ev.partition_key}: fitting on {len(train_x)} train / {len(val_x)} validation instances")
    scorer.fit(train_x, train_y, val_x, val_y, seed=problem.seed)
    scores = np.asarray(scorer.score(problem.test), dtype=np.float64)
    log(f"{ev.partition_key}: scored {len(scores)} test instances")
    table = problem.table(scores)
    finished: dict = {}
    if problem.finish is not None:
        val_scores = np.asarray(scorer.score(val_x), dtype=np.float64)
        metadata, finished = problem.finish(val_scores, scorer.probabilistic, log)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    wall = time.monotonic() - started
    usage = Usage(wall_seconds=wall, device_seconds=wall)
    config = {"backend": ev.model.backend, "backend_settings": ev.backend.published(ev.model.settings),
              "bootstrap": msgspec.to_builtins(ev.task.bootstrap), **problem.config,
              "fitted": scorer.describe(), **finished}
    return Predicted(table=table, usage=asdict(usage), config=config, generation_key=None)
