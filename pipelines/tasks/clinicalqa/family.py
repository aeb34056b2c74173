"""The clinicalqa task family: five-option Korean clinical questions, answered in text, scored by accuracy.

Dataset ``clinicalqa`` (one snapshot row per question); instances ``items.parquet`` (one prompt per
question, ``items.py``); models are text generators (``pipelines.backends``) whose raw outputs are
stored under a generation key and parsed by the versioned answer parser (``parsing/``): the family
declares a ``TextChoice`` and the engine's text-choice solver runs it on any text backend; the score
is accuracy and parse rate with percentile-bootstrap intervals, plus accuracy by category
(``score.py``). Warehouse kind ``choice``.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.backends.replay import read_replay
from medbench.evaluation import Evaluation
from medbench.specs import TaskSpec
from pipelines.datasets.clinicalqa.source import read_clinicalqa_snapshot
from medbench.stats.validity import gate
from pipelines.tasks.base import (
    CheckOutcome, Instances, Log, ReplayScore, ScoreSummary, TaskFamily, TextChoice, predicted_once,
)
from pipelines.tasks.clinicalqa.items import BREAKDOWN_FIELDS, items_table, prompt_items, template_hash
from pipelines.tasks.clinicalqa.score import (
    PREDICTIONS_SCHEMA, breakdowns, predictions_table, score_choice, summarise_choice,
)
from pipelines.tasks.clinicalqa.settings import ChoiceSettings
from medbench.files import atomic_path


class CategoryAccuracy(msgspec.Struct, frozen=True):
    category: str
    n: int
    accuracy: float
    ci_low: float
    ci_high: float


class UnparsedOutput(msgspec.Struct, frozen=True):
    instance_id: str
    output: str  # the raw output, cut to its first 300 characters


class ClinicalQAExtras(msgspec.Struct, frozen=True):
    """A clinicalqa result's ``extras``: accuracy by category (the site's table), parse status counts,
    and the first 20 unparsed outputs (``/v1/results/{run_id}`` serves them as ``unparsed_sample``)."""

    by_category: list[CategoryAccuracy]
    parse_status: dict[str, int]
    unparsed_sample: list[UnparsedOutput] = []


class ClinicalQA(TaskFamily):
    name = "clinicalqa"
    kind = "choice"
    cluster_column = None  # the questions are independent: intervals resample items
    dataset = "clinicalqa"
    settings_key = "choice"
    settings_type = ChoiceSettings
    instances_file = "items.parquet"
    predictions_schema = PREDICTIONS_SCHEMA
    instance_check_names = ("row_count_matches_spec",)
    prediction_check_names = ("every_instance_predicted_once",)
    scores_replays = True
    check_descriptions = {
        "row_count_matches_spec": "The instances file has as many items as the task spec's n_items.",
        "every_instance_predicted_once": ("Every instance id the task defines appears in the predictions "
                                          "exactly once, and no other id does."),
    }

    # -- spec --------------------------------------------------------------------------

    def check_settings(self, task: TaskSpec) -> None:
        s: ChoiceSettings = task.settings
        if not s.options or len(set(s.options)) != len(s.options):
            raise ValueError(f"options {s.options!r} must be distinct and non-empty")

    def snapshot_options(self, task: TaskSpec) -> dict[str, Any]:
        return {"expected_rows": task.settings.n_items}

    def parser_version(self, task: TaskSpec) -> str | None:
        return task.settings.parser

    def planned_items(self, task: TaskSpec) -> int | None:
        return task.settings.n_items

    def token_cap(self, task: TaskSpec) -> int | None:
        return task.settings.max_new_tokens

    # -- instances ---------------------------------------------------------------------

    def build_instances(self, task: TaskSpec, snapshot: Path, out: Path, log: Log) -> Instances:
        table = items_table(read_clinicalqa_snapshot(snapshot), task.settings)
        with atomic_path(out) as tmp:
            pq.write_table(table, tmp)
        log(f"{task.ref}: {table.num_rows} items from snapshot {snapshot.stem}")
        return Instances(out, table.num_rows, {})

    def instance_checks(self, task: TaskSpec, instances: Path) -> list[CheckOutcome]:
        rows = pq.ParquetFile(instances).metadata.num_rows
        expected = task.settings.n_items
        return [CheckOutcome("row_count_matches_spec", rows == expected,
                             metadata={f"{task.ref} items": rows, f"{task.ref} expected": expected})]

    def expected_ids(self, task: TaskSpec, instances: Path) -> set[str]:
        return set(pq.read_table(instances, columns=["instance_id"]).column("instance_id").to_pylist())

    # -- predict and score -------------------------------------------------------------

    def problem(self, ev: Evaluation, instances: Path) -> TextChoice:
        """One prompt per item, answered in text and parsed by the spec's parser version."""
        settings: ChoiceSettings = ev.task.settings
        items = pq.read_table(instances)
        return TextChoice(
            prompts=prompt_items(items), prompt_hash=template_hash(settings), max_new_tokens=settings.max_new_tokens,
            temperature=settings.temperature, options=settings.options,
            parse=lambda outputs: predictions_table(items, outputs, settings.options, settings.parser),
            config={"parser": settings.parser},
        )

    def score(self, task: TaskSpec, predictions: pa.Table, instances: Path) -> ScoreSummary:
        present = [f for f in BREAKDOWN_FIELDS if f in pq.read_schema(instances).names]  # older items: category only
        items = pq.read_table(instances, columns=["instance_id", *present])
        row_of = {iid: k for k, iid in enumerate(items.column("instance_id").to_pylist())}
        rows = [row_of[i] for i in predictions.column("instance_id").to_pylist()]
        fields = {f: [items.column(f)[k].as_py() for k in rows] for f in present}
        scored = summarise_choice(predictions, fields["category"], task.bootstrap, task.intervals)
        extras = ClinicalQAExtras(by_category=[CategoryAccuracy(**asdict(c)) for c in scored.by_category],
                                  parse_status=scored.status_counts,
                                  unparsed_sample=[UnparsedOutput(**u) for u in scored.unparsed_sample])
        correct = predictions.column("correct").to_numpy(zero_copy_only=False).astype(bool)
        metrics, withheld = gate([tuple(m) for m in scored.metrics], task.bootstrap.replicates)
        return ScoreSummary(metrics=metrics, n=scored.n, parse_rate=scored.parse_rate,
                            extras=extras, breakdowns=breakdowns(correct, fields), withheld=withheld)

    def prediction_checks(self, task: TaskSpec, predictions: pa.Table, expected: set[str]) -> list[CheckOutcome]:
        return [predicted_once(predictions, expected)]

    def public_instances(self, task: TaskSpec, snapshot: Path, instances: Path) -> list[dict[str, Any]]:
        """The question, the exam findings and the options (letter -> text) of each item; no answer."""
        wanted = self.expected_ids(task, instances)
        letters = task.settings.options
        return [{"instance_id": str(row["question_id"]), "question": row["question"].strip(),
                 "findings": (row.get("exam") or "").strip(),
                 "options": {k: row["options"][f"option_{k}"].strip() for k in letters}}
                for row in read_clinicalqa_snapshot(snapshot) if str(row["question_id"]) in wanted]

    # -- medbench score ----------------------------------------------------------------

    def score_replay(self, task: TaskSpec, snapshot: Path, outputs: Path) -> ReplayScore:
        """Score a replay file (JSONL of instance_id, output) against the snapshot's gold letters."""
        items = items_table(read_clinicalqa_snapshot(snapshot), task.settings)
        replayed = read_replay(outputs, items.column("instance_id").to_pylist())
        score = score_choice(items, replayed, task.settings, task.bootstrap, task.intervals)
        rows = score.predictions.select(["instance_id", "prediction", "parse_status", "correct"]).to_pylist()
        return ReplayScore(parser_version=score.parser_version, n=score.n, status_counts=score.status_counts,
                           metrics=list(score.metrics), rows=rows)
