"""The ``toyhospital-anaemia`` family (kind ``choice``): read an admission's haemoglobin results and
say which range the lowest one falls in (four options), answered in text.

Instances ``items.parquet``: the first ``n_items`` admissions (by ``hadm_id``) with at least one
result in the first ``input_hours``, each a prompt listing the patient's age, sex and results, and
the gold letter. The family declares a ``TextChoice`` (its prompts and its parser), so any text
backend serves it through the engine's text-choice solver (the built-in uniform rule, a replay
file, a language model). The parser reads the last line's ``<word>: <letter>``. Items are
independent questions: ``cluster_column = None``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from medbench_toyhospital.cohort import lab_grid
from pipelines.core.canonical import SpecStruct
from pipelines.core.evaluation import Evaluation
from pipelines.core.outcomes import PromptItem
from pipelines.core.specs import TaskSpec
from pipelines.kinds.choice import Choice
from pipelines.stats.wilson import wilson_interval
from pipelines.tasks.base import (
    CheckOutcome, Instances, Log, ScoreSummary, TaskFamily, TextChoice, predicted_once,
)
from warehouse.files import atomic_path

PREDICTIONS_SCHEMA = Choice.schema  # the choice kind's columns, nothing of its own
PARSER = "last-line-colon-letter/1"
ANSWER = re.compile(r":\s*([A-Z])[\s.)]*$")


class AnaemiaSettings(SpecStruct):
    """The ``[anaemia]`` table: ``cuts`` are the range bounds in g/dL (len(options) - 1 of them)."""

    n_items: int
    itemid: int
    input_hours: int
    step_hours: int
    options: list[str]
    cuts: list[float]
    max_new_tokens: int
    temperature: float
    prompt_template: str


class CategoryAccuracy(msgspec.Struct, frozen=True):
    category: str
    n: int
    accuracy: float
    ci_low: float
    ci_high: float


class AnaemiaExtras(msgspec.Struct, frozen=True):
    by_category: list[CategoryAccuracy]  # by sex (the site's bars: the choice kind's picture)
    parse_status: dict[str, int]


def _ranges(cuts: list[float]) -> list[str]:
    bounds = [f"below {cuts[0]:.1f}"]
    bounds += [f"{lo:.1f} to {hi - 0.1:.1f}" for lo, hi in zip(cuts, cuts[1:])]
    return bounds + [f"{cuts[-1]:.1f} or above"]


def parse(raw: str, options: list[str]) -> str | None:
    """The letter of the last non-blank line's ``<word>: <letter>``; None when there is none."""
    lines = [line for line in raw.strip().splitlines() if line.strip()]
    match = ANSWER.search(lines[-1]) if lines else None
    return match.group(1) if match and match.group(1) in options else None


class AnaemiaGrade(TaskFamily):
    name = "toyhospital-anaemia"
    kind = "choice"
    cluster_column = None
    dataset = "toyhospital"
    settings_key = "anaemia"
    settings_type = AnaemiaSettings
    instances_file = "items.parquet"
    predictions_schema = PREDICTIONS_SCHEMA
    instance_check_names = ("row_count_matches_spec",)
    prediction_check_names = ("every_instance_predicted_once",)
    check_descriptions = {"row_count_matches_spec": "The instances file has as many items as the spec's n_items."}

    def check_settings(self, task: TaskSpec) -> None:
        s: AnaemiaSettings = task.settings
        if len(s.cuts) != len(s.options) - 1 or sorted(s.cuts) != s.cuts:
            raise ValueError("cuts must be increasing, one fewer than the options")

    def snapshot_options(self, task: TaskSpec) -> dict[str, Any]:
        return {}

    def parser_version(self, task: TaskSpec) -> str | None:
        return PARSER

    def planned_items(self, task: TaskSpec) -> int | None:
        return task.settings.n_items

    def token_cap(self, task: TaskSpec) -> int | None:
        return task.settings.max_new_tokens

    def build_instances(self, task: TaskSpec, snapshot: Path, out: Path, log: Log) -> Instances:
        s: AnaemiaSettings = task.settings
        grid = lab_grid(snapshot, s.itemid, s.input_hours, s.step_hours)
        keep = np.flatnonzero((~np.isnan(grid.values)).any(axis=1))[: s.n_items]
        adm = grid.admissions.take(pa.array(keep))
        ranges = _ranges(s.cuts)
        rows = []
        for (hadm, age, sex), values in zip(zip(adm.column("hadm_id").to_pylist(), adm.column("age").to_pylist(),
                                                adm.column("sex").to_pylist()), grid.values[keep]):
            results = ", ".join(f"{v:.1f} at {i * s.step_hours} h" for i, v in enumerate(values) if not np.isnan(v))
            options = "\n".join(f"{letter}. {text}" for letter, text in zip(s.options, ranges))
            prompt = s.prompt_template.format(age=age, sex={"F": "woman", "M": "man"}[sex], results=results,
                                              options=options)
            gold = s.options[int(np.searchsorted(s.cuts, float(np.nanmin(values)), side="right"))]
            rows.append({"instance_id": str(hadm), "prompt": prompt, "label": gold, "category": sex})
        table = pa.Table.from_pylist(rows)
        with atomic_path(out) as tmp:
            pq.write_table(table, tmp)
        log(f"{task.ref}: {table.num_rows} items")
        return Instances(out, table.num_rows)

    def instance_checks(self, task: TaskSpec, instances: Path) -> list[CheckOutcome]:
        rows = pq.ParquetFile(instances).metadata.num_rows
        return [CheckOutcome("row_count_matches_spec", rows == task.settings.n_items,
                             metadata={"items": rows, "expected": task.settings.n_items})]

    def expected_ids(self, task: TaskSpec, instances: Path) -> set[str]:
        return set(pq.read_table(instances, columns=["instance_id"]).column("instance_id").to_pylist())

    def problem(self, ev: Evaluation, instances: Path) -> TextChoice:
        s: AnaemiaSettings = ev.task.settings
        items = pq.read_table(instances)
        ids, labels = items.column("instance_id").to_pylist(), items.column("label").to_pylist()

        def predictions(outputs: dict[str, str]) -> pa.Table:
            raw = [outputs[i] for i in ids]
            answers = [parse(r, s.options) for r in raw]
            return pa.table({"instance_id": ids, "prediction": [a or "" for a in answers], "label": labels,
                             "correct": [a == g for a, g in zip(answers, labels)],
                             "parse_status": ["ok" if a else "unparsed" for a in answers], "raw_output": raw},
                            schema=PREDICTIONS_SCHEMA)

        template = hashlib.sha256(s.prompt_template.encode()).hexdigest()[:16]
        return TextChoice(prompts=[PromptItem(i, p) for i, p in zip(ids, items.column("prompt").to_pylist())],
                          prompt_hash=template, max_new_tokens=s.max_new_tokens, temperature=s.temperature,
                          options=s.options, parse=predictions, config={"parser": PARSER})

    def score(self, task: TaskSpec, predictions: pa.Table, instances: Path) -> ScoreSummary:
        items = pq.read_table(instances, columns=["instance_id", "category"])
        category = dict(zip(items.column("instance_id").to_pylist(), items.column("category").to_pylist()))
        correct = np.asarray(predictions.column("correct").to_pylist(), dtype=bool)
        parsed = np.asarray([s == "ok" for s in predictions.column("parse_status").to_pylist()])
        cats = np.asarray([category[i] for i in predictions.column("instance_id").to_pylist()])

        def metric(name: str, hits: np.ndarray) -> tuple:
            low, high = wilson_interval(int(hits.sum()), len(hits))
            return (name, float(hits.mean()), low, high, "wilson")

        by = [CategoryAccuracy(str(c), int((cats == c).sum()), *metric(c, correct[cats == c])[1:4])
              for c in sorted(set(cats))]
        statuses = predictions.column("parse_status").to_pylist()
        extras = AnaemiaExtras(by_category=by, parse_status={k: statuses.count(k) for k in sorted(set(statuses))})
        return ScoreSummary(metrics=[metric("accuracy", correct), metric("parse_rate", parsed)], n=len(correct),
                            parse_rate=float(parsed.mean()), extras=extras)

    def prediction_checks(self, task: TaskSpec, predictions: pa.Table, expected: set[str]) -> list[CheckOutcome]:
        return [predicted_once(predictions, expected)]
