"""The clinicalqa-open task family: the ClinicalQA questions without their options, answered in free
text and graded by a judge model against a rubric derived from each item (kind ``rubric``).

Dataset ``clinicalqa`` (the real loader's snapshot, as clinicalqa@N reads it); instances
``items.parquet``: the prompt (question and findings, no options) and the item's criteria
(``rubric_rule.py``); the problem answers, then judges (``judging.py``); the score is the rubric
score with its two-stage and items-only intervals and ``judge_agreement``
(``medbench.stats.rubric``). docs/adding-a-task.md, "The rubric kind and clinicalqa-open".

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from medbench.evaluation import Evaluation
from medbench.protocols import NotRunnable
from medbench.specs import TaskSpec
from pipelines.datasets.clinicalqa.source import read_clinicalqa_snapshot
from medbench.kinds.rubric import Rubric
from pipelines.tasks.base import CheckOutcome, Instances, Log, ScoreSummary, TaskFamily, predicted_once
from pipelines.tasks.clinicalqa_open.judging import AnswerAndJudge, Judge, judge_prompt_sha256, sampling_kwargs
from pipelines.tasks.clinicalqa_open.rubric_rule import derive_criteria, rubric_sha256
from pipelines.tasks.clinicalqa_open.scorecard import judge_scorecard, read_reference
from pipelines.tasks.clinicalqa_open.scoring import score_rubric
from pipelines.tasks.clinicalqa_open.settings import RubricSettings
from medbench.files import atomic_path

PREDICTIONS_SCHEMA = Rubric.schema
CRITERIA = pa.list_(pa.struct([("id", pa.string()), ("text", pa.string()), ("points", pa.float64()),
                               ("tags", pa.list_(pa.string()))]))
ITEMS_SCHEMA = pa.schema([("instance_id", pa.string()), ("prompt", pa.string()), ("category", pa.string()),
                          ("criteria", CRITERIA), ("rubric_sha256", pa.string())])


def build_prompt(row: dict[str, Any], s: RubricSettings) -> str:
    exam = (row.get("exam") or "").strip()
    return s.prompt_template.format(question=row["question"].strip(),
                                    exam_block=s.exam_template.format(exam=exam) if exam else "")


def items_table(rows: list[dict[str, Any]], s: RubricSettings) -> pa.Table:
    cols: dict[str, list] = {n: [] for n in ITEMS_SCHEMA.names}
    for row in rows:
        criteria = derive_criteria(row, s)
        cols["instance_id"].append(str(row["question_id"]))
        cols["prompt"].append(build_prompt(row, s))
        cols["category"].append((row.get("category") or "").strip() or "Uncategorized")
        cols["criteria"].append([msgspec.to_builtins(c) for c in criteria])
        cols["rubric_sha256"].append(rubric_sha256(criteria))
    return pa.table(cols, schema=ITEMS_SCHEMA)


def predictions_table(items: list[dict[str, Any]], answers: dict[str, str],
                      verdicts: dict[str, list[list[tuple[bool, str]]]], judge: Judge) -> pa.Table:
    """One row per item: answer, rubric hash, mean score over judge samples, the grades as lists."""
    from medbench.stats.rubric import item_scores

    cols: dict[str, list] = {n: [] for n in PREDICTIONS_SCHEMA.names}
    for r in items:
        iid, crit = r["instance_id"], r["criteria"]
        per_sample = verdicts[iid]  # [S][K] of (met, justification)
        met = np.array([[v[0] for v in sample] for sample in per_sample], dtype=bool).T[None]  # [1, K, S]
        points = np.array([[c["points"] for c in crit]], dtype=np.float64)
        cols["instance_id"].append(iid)
        cols["score"].append(float(item_scores(met, points).mean()))
        cols["answer"].append(answers.get(iid, ""))
        cols["rubric_sha256"].append(r["rubric_sha256"])
        cols["criterion_id"].append([c["id"] for c in crit for _ in per_sample])
        cols["judge_sample"].append([s for _ in crit for s in range(len(per_sample))])
        cols["met"].append([per_sample[s][k][0] for k in range(len(crit)) for s in range(len(per_sample))])
        cols["justification"].append([per_sample[s][k][1] for k in range(len(crit)) for s in range(len(per_sample))])
        cols["points"].append([float(c["points"]) for c in crit for _ in per_sample])
    return pa.table(cols, schema=PREDICTIONS_SCHEMA)


def resolve_judge(ev: Evaluation, data: Any) -> Judge:
    """The evaluation's judge (the task spec's, or the one ``plan`` was given) with its backend."""
    s: RubricSettings = ev.task.settings
    spec, backend = ev.judge, ev.judge_backend
    if spec is None or backend is None:
        raise NotRunnable(f"{ev.partition_key}: no judge was planned for this rubric task")
    if reason := backend.not_runnable_reason(spec, data):
        raise NotRunnable(f"judge {spec.slug}: {reason}")
    cap = backend.max_new_tokens(spec, s.judge_max_new_tokens)
    return Judge(model=spec.slug, revision=spec.revision, prompt_sha256=judge_prompt_sha256(s.judge_prompt_template),
                 samples=s.judge_samples, temperature=s.judge_temperature, max_new_tokens=cap, backend=spec.backend,
                 backend_settings=backend.published(spec.settings),
                 generator=lambda: backend.text_generator(spec, data, max_new_tokens=cap, options=(),
                                                          **sampling_kwargs(s.judge_temperature)))


class ClinicalQAOpen(TaskFamily):
    name = "clinicalqa-open"
    kind = "rubric"
    cluster_column = None  # the questions are independent: intervals resample items (and judge samples)
    dataset = "clinicalqa"
    settings_key = "rubric"
    settings_type = RubricSettings
    instances_file = "items.parquet"
    predictions_schema = PREDICTIONS_SCHEMA
    instance_check_names = ("row_count_matches_spec",)
    prediction_check_names = ("every_instance_predicted_once", "judge_replies_read", "judge_scorecard")
    check_descriptions = {
        "row_count_matches_spec": "The instances file has as many items as the task spec's n_items.",
        "judge_replies_read": "Every grade has a verdict: no criterion left ungraded by an unreadable judge reply.",
        "judge_scorecard": ("Where reference grades cover the answers, the judge's Cohen's kappa with them is at least "
                            "the spec's min_judge_kappa."),
    }

    def check_settings(self, task: TaskSpec) -> None:
        s: RubricSettings = task.settings
        if s.judge_samples < 1:
            raise ValueError("judge_samples must be at least 1")
        if s.gold_points <= 0 or s.distractor_points > 0:
            raise ValueError("gold_points must be positive and distractor_points zero or negative")
        if "/" not in s.judge:
            raise ValueError(f"judge {s.judge!r} must be a model slug, provider/name")

    def judge(self, task: TaskSpec, demo: bool = False) -> str | None:
        return task.settings.demo_judge if demo and task.settings.demo_judge else task.settings.judge

    def snapshot_options(self, task: TaskSpec) -> dict[str, Any]:
        return {"expected_rows": task.settings.n_items}

    def parser_version(self, task: TaskSpec) -> str | None:
        return None

    def planned_items(self, task: TaskSpec) -> int | None:
        return task.settings.n_items

    def token_cap(self, task: TaskSpec) -> int | None:
        return task.settings.max_new_tokens

    def build_instances(self, task: TaskSpec, snapshot: Path, out: Path, log: Log) -> Instances:
        table = items_table(read_clinicalqa_snapshot(snapshot), task.settings)
        with atomic_path(out) as tmp:
            pq.write_table(table, tmp)
        log(f"{task.ref}: {table.num_rows} items with rubric rule {task.settings.rule}")
        return Instances(out, table.num_rows, {"rule": task.settings.rule})

    def instance_checks(self, task: TaskSpec, instances: Path) -> list[CheckOutcome]:
        rows = pq.ParquetFile(instances).metadata.num_rows
        return [CheckOutcome("row_count_matches_spec", rows == task.settings.n_items,
                             metadata={"items": rows, "expected": task.settings.n_items})]

    def expected_ids(self, task: TaskSpec, instances: Path) -> set[str]:
        return set(pq.read_table(instances, columns=["instance_id"]).column("instance_id").to_pylist())

    def problem(self, ev: Evaluation, instances: Path) -> AnswerAndJudge:
        s: RubricSettings = ev.task.settings
        items = pq.read_table(instances).to_pylist()
        template = s.prompt_template + "\0" + s.exam_template
        return AnswerAndJudge(
            items=items, prompt_hash=hashlib.sha256(template.encode("utf-8")).hexdigest(),
            max_new_tokens=s.max_new_tokens, temperature=s.temperature, judge_for=lambda data: resolve_judge(ev, data),
            judge_template=s.judge_prompt_template,
            table=lambda answers, verdicts, judge: predictions_table(items, answers, verdicts, judge),
            config={"rubric_rule": s.rule},
        )

    def score(self, task: TaskSpec, predictions: pa.Table, instances: Path) -> ScoreSummary:
        return score_rubric(task, predictions, instances)

    def prediction_checks(self, task: TaskSpec, predictions: pa.Table, expected: set[str]) -> list[CheckOutcome]:
        from pipelines.tasks.clinicalqa_open.judging import UNGRADED

        ungraded = sum(j == UNGRADED for row in predictions.column("justification").to_pylist() for j in row)
        s: RubricSettings = task.settings
        card = judge_scorecard(predictions, read_reference(s.reference_grades), s.min_judge_kappa,
                               task.bootstrap.replicates, task.bootstrap.seed)
        scored = ({"graded criteria": card.n_criteria, "kappa": round(card.kappa, 4), "min kappa": s.min_judge_kappa}
                  if card is not None else {"graded criteria": 0})
        return [predicted_once(predictions, expected),
                CheckOutcome("judge_replies_read", ungraded == 0, metadata={"ungraded criteria": ungraded},
                             severity="warn"),
                CheckOutcome("judge_scorecard", card is None or card.passed, metadata=scored)]

    def public_instances(self, task: TaskSpec, snapshot: Path, instances: Path) -> list[dict[str, Any]]:
        """The prompt of each item (question and findings, no options, no rubric)."""
        return [{"instance_id": r["instance_id"], "prompt": r["prompt"]}
                for r in pq.read_table(instances, columns=["instance_id", "prompt"]).to_pylist()]

