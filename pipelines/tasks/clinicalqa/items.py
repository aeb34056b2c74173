"""clinicalqa@N items: one prompt per ClinicalQA question, built from the task spec's template.

The template lives in the spec (so it is part of the spec hash and of every run id), never in
code; this module only fills it in. The prompt is the user message: chat models apply their own
chat template to it. The exam block appears only for questions with exam findings, so the
question never carries an empty "검사 소견:" line.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable, Mapping

import pyarrow as pa

from medbench.outcomes import PromptItem
from pipelines.tasks.clinicalqa.settings import ChoiceSettings

UNCATEGORISED = "Uncategorized"
UNSPECIFIED = "Unspecified"  # an item without a purpose or a source
BREAKDOWN_FIELDS = ("category", "purpose", "source")

ITEMS_SCHEMA = pa.schema(
    [
        ("instance_id", pa.string()),
        ("label", pa.string()),
        ("category", pa.string()),
        ("prompt", pa.string()),
        ("options", pa.list_(pa.string())),  # the option texts in option order (parser v2 reads them)
        ("purpose", pa.string()),  # what the question asks (diagnosis, test, treatment): a breakdown
        ("source", pa.string()),  # where the question comes from: a breakdown
    ]
)


def build_prompt(row: Mapping[str, Any], settings: ChoiceSettings) -> str:
    """The user message for one question: question, exam block when present, the options."""
    exam = (row.get("exam") or "").strip()
    exam_block = settings.exam_template.format(exam=exam) if exam else ""
    options = row["options"]
    return settings.prompt_template.format(
        question=row["question"].strip(),
        exam_block=exam_block,
        **{f"option_{letter}": options[f"option_{letter}"].strip() for letter in settings.options},
    )


def template_hash(settings: ChoiceSettings) -> str:
    """sha256 of the prompt template and the exam template (NUL-separated, so no two template
    pairs share a hash); recorded in a result's config next to the spec hash."""
    payload = settings.prompt_template + "\0" + settings.exam_template
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def items_table(rows: Iterable[Mapping[str, Any]], settings: ChoiceSettings) -> pa.Table:
    """The task instances in snapshot order: instance_id (= str(question_id)), label, category,
    prompt, and the option texts (so a parser can tell a label followed by its own text)."""
    columns: dict[str, list] = {name: [] for name in ITEMS_SCHEMA.names}
    for row in rows:
        columns["instance_id"].append(str(row["question_id"]))
        columns["label"].append(row["answer"])
        columns["category"].append((row.get("category") or "").strip() or UNCATEGORISED)
        columns["prompt"].append(build_prompt(row, settings))
        columns["options"].append([row["options"][f"option_{letter}"].strip() for letter in settings.options])
        columns["purpose"].append((row.get("purpose") or "").strip() or UNSPECIFIED)
        columns["source"].append((row.get("source") or "").strip() or UNSPECIFIED)
    return pa.table(columns, schema=ITEMS_SCHEMA)


def prompt_items(items: pa.Table) -> list[PromptItem]:
    """The prompts of an items table, in order, as the text generators take them."""
    return [
        PromptItem(instance_id=iid, prompt=prompt)
        for iid, prompt in zip(items.column("instance_id").to_pylist(), items.column("prompt").to_pylist())
    ]
