"""Scoring a choice task: parse every raw output, compare with the gold letter, summarise.

Scoring reads raw outputs (from any backend, or a replay file) and never calls a model, so a new
parser version re-scores stored outputs. Every item must have an output: a missing one is an
error, because counting it as wrong or skipping it would both publish a score for something that
was not evaluated. Unparsable answers (no_answer, ambiguous, empty) count as wrong and lower the
parse rate. Every metric carries a seeded percentile-bootstrap 95% interval over items; the
by-category intervals resample within the category, with the task's seed.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, NamedTuple, Sequence, get_args

import numpy as np
import pyarrow as pa

from pipelines.tasks.clinicalqa.parsing.tokens import DEFAULT_OPTIONS, ParseStatus
from pipelines.tasks.clinicalqa.parse_batch import ParsingFailed, parse_batch
from pipelines.tasks.clinicalqa.parsing.versions import DEFAULT_VERSION, TAKES_OPTION_TEXTS, parser_for
from medbench.specs import BootstrapSpec, IntervalsSpec
from medbench.kinds.choice import Choice
from pipelines.tasks.clinicalqa.settings import ChoiceSettings
from medbench.stats.bootstrap import percentile_bootstrap_mean
from medbench.stats.wilson import wilson_interval

PREDICTIONS_SCHEMA = Choice.schema  # the choice kind's columns (docs/duckdb.md), nothing of its own
PARSE_STATUSES: tuple[str, ...] = get_args(ParseStatus)
MAX_REPORTED = 5
# A result publishes its first UNPARSED_SAMPLE unparsed outputs (item order), each cut to
# UNPARSED_CHARS characters, so a reader sees what was counted wrong without downloading them all.
UNPARSED_SAMPLE = 20
UNPARSED_CHARS = 300


class ScoringError(ValueError):
    """The outputs cannot be scored against these items (missing outputs, wrong parser version)."""


class MetricValue(NamedTuple):
    name: str
    value: float
    ci_low: float
    ci_high: float
    method: str = "bootstrap-percentile"


@dataclass(frozen=True)
class CategoryScore:
    category: str
    n: int
    accuracy: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class ChoiceScore:
    predictions: pa.Table  # PREDICTIONS_SCHEMA, in item order
    metrics: list[MetricValue]  # accuracy, parse_rate, then accuracy[<category>] by category name
    n: int
    parse_rate: float
    by_category: list[CategoryScore]
    status_counts: dict[str, int] = field(default_factory=dict)
    parser_version: str = DEFAULT_VERSION
    unparsed_sample: list[dict[str, str]] = field(default_factory=list)  # [{instance_id, output}]

    @property
    def accuracy(self) -> MetricValue:
        return self.metrics[0]


def _item_columns(
    items: pa.Table | Sequence[Mapping[str, Any]], with_category: bool
) -> tuple[list[str], list[str], list[str]]:
    if isinstance(items, pa.Table):
        ids = [str(v) for v in items.column("instance_id").to_pylist()]
        labels = items.column("label").to_pylist()
        categories = items.column("category").to_pylist() if with_category else []
    else:
        ids = [str(item["instance_id"]) for item in items]
        labels = [item["label"] for item in items]
        categories = [item["category"] for item in items] if with_category else []
    return ids, labels, categories


def _option_texts(items: pa.Table | Sequence[Mapping[str, Any]], n: int) -> list[list[str]] | None:
    """Each item's option texts in option order (the items' ``options`` column), or None without one."""
    if isinstance(items, pa.Table):
        return items.column("options").to_pylist() if "options" in items.column_names else None
    if n and all("options" in item for item in items):
        return [list(item["options"]) for item in items]
    return None


def predictions_table(
    items: pa.Table | Sequence[Mapping[str, Any]],
    outputs: Mapping[str, str],
    options: Sequence[str] = DEFAULT_OPTIONS,
    parser: str = DEFAULT_VERSION,
) -> pa.Table:
    """The Predictions Parquet table (docs/duckdb.md, "Tables": choice tasks) in item order.

    Every item needs an output (a ScoringError names how many do not); outputs for other ids are
    not this function's concern (the replay reader and the GenerationStore key guard those).
    """
    ids, labels, _ = _item_columns(items, with_category=False)
    if not ids:
        raise ScoringError("no items to score")
    if len(set(ids)) != len(ids):
        counts = Counter(ids)
        repeated = sorted(iid for iid, c in counts.items() if c > 1)
        raise ScoringError(f"items repeat instance ids: {', '.join(repr(i) for i in repeated[:MAX_REPORTED])}")
    missing = [iid for iid in ids if iid not in outputs]
    if missing:
        shown = ", ".join(repr(i) for i in missing[:MAX_REPORTED]) + (", ..." if len(missing) > MAX_REPORTED else "")
        raise ScoringError(f"{len(missing)} of {len(ids)} items have no output (e.g. {shown})")
    opts = tuple(options)
    texts = _option_texts(items, len(ids))
    parser_for(parser)  # an unknown version is a ValueError here, not the child's
    option_texts = None if texts is None or not TAKES_OPTION_TEXTS & {parser} else [dict(zip(opts, t)) for t in texts]
    try:  # in one child process, under a memory cap and a time limit (parse_batch.py)
        parsed = parse_batch([outputs[iid] for iid in ids], opts, parser, option_texts)
    except ParsingFailed as exc:
        raise ScoringError(str(exc)) from None
    predictions = [r.prediction for r in parsed]
    return pa.table(
        {
            "instance_id": ids,
            "prediction": predictions,
            "label": labels,
            "correct": [p is not None and p == label for p, label in zip(predictions, labels, strict=True)],
            "parse_status": [r.status for r in parsed],
            "raw_output": [outputs[iid] for iid in ids],
        },
        schema=PREDICTIONS_SCHEMA,
    )


def score_choice(
    items: pa.Table | Sequence[Mapping[str, Any]],
    outputs: Mapping[str, str],
    settings: ChoiceSettings,
    bootstrap: BootstrapSpec,
    intervals: IntervalsSpec = IntervalsSpec(),
) -> ChoiceScore:
    """Parse, compare and summarise; ``items`` has instance_id, label and category per item."""
    _, _, categories = _item_columns(items, with_category=True)
    table = predictions_table(items, outputs, settings.options, settings.parser)
    # the parser that read the outputs is the settings' one, whatever a score's default says
    return replace(summarise_choice(table, categories, bootstrap, intervals), parser_version=settings.parser)


def unparsed_sample(table: pa.Table, limit: int = UNPARSED_SAMPLE, chars: int = UNPARSED_CHARS) -> list[dict[str, str]]:
    """The first ``limit`` outputs (item order) whose parse status is not ``ok``, cut to ``chars`` characters."""
    out = []
    ids, statuses, raws = (table.column(c).to_pylist() for c in ("instance_id", "parse_status", "raw_output"))
    for iid, status, raw in zip(ids, statuses, raws, strict=True):
        if status != "ok":
            out.append({"instance_id": iid, "output": (raw or "")[:chars]})
            if len(out) == limit:
                break
    return out


def proportion(name: str, values: np.ndarray, bootstrap: BootstrapSpec, intervals: IntervalsSpec) -> MetricValue:
    """One proportion (mean of a bool array) with the interval the spec names."""
    if intervals.proportion == "wilson":
        k, n = int(values.sum()), int(values.size)
        low, high = wilson_interval(k, n)
        return MetricValue(name, k / n if n else float("nan"), low, high, "wilson")
    return MetricValue(name, *percentile_bootstrap_mean(values, bootstrap.replicates, bootstrap.seed))


def summarise_choice(
    table: pa.Table, categories: Sequence[str], bootstrap: BootstrapSpec, intervals: IntervalsSpec = IntervalsSpec()
) -> ChoiceScore:
    """Metrics of stored predictions (``categories`` aligned with the table's rows).

    The pipeline calls this on the predictions Parquet and ``medbench score`` through
    ``score_choice``, so a published result and a local score can never drift apart.
    """
    correct = np.asarray(table.column("correct").to_pylist(), dtype=bool)
    statuses = table.column("parse_status").to_pylist()
    parsed = np.asarray([s == "ok" for s in statuses], dtype=bool)
    # accuracy_upper: the accuracy had every unparsed reply been right, a bound on how much the parser
    # could move the score (docs/statistics.md, "Parse bounds"); accuracy itself is its lower end
    metrics = [proportion("accuracy", correct, bootstrap, intervals),
               proportion("parse_rate", parsed, bootstrap, intervals),
               proportion("accuracy_upper", correct | ~parsed, bootstrap, intervals)]
    by_category: list[CategoryScore] = []
    category_array = np.asarray(categories, dtype=object)
    for category in sorted(set(categories)):
        values = correct[category_array == category]
        metric = proportion(f"accuracy[{category}]", values, bootstrap, intervals)
        by_category.append(CategoryScore(category, int(values.size), metric.value, metric.ci_low, metric.ci_high))
        metrics.append(metric)
    counts = Counter(statuses)
    return ChoiceScore(
        predictions=table,
        metrics=metrics,
        n=table.num_rows,
        parse_rate=metrics[1].value,
        by_category=by_category,
        status_counts={status: counts.get(status, 0) for status in PARSE_STATUSES},
        unparsed_sample=unparsed_sample(table),
    )


def breakdowns(correct: np.ndarray, fields: Mapping[str, Sequence[str]]) -> dict[str, list]:
    """Accuracy by each field's groups (``{"category": [...], "purpose": [...], "source": [...]}``,
    aligned with ``correct``), each with its 95% Wilson interval.

    Why Wilson whatever the spec's ``intervals``: a group can be small (a category of 29 items)
    and can be all wrong or all right, where a bootstrap interval collapses to a point. These are
    per-group intervals, not simultaneous ones: the published ``breakdowns_caveat`` says so.
    """
    from medbench.records import Breakdown
    from medbench.records import MetricValue as Metric

    out: dict[str, list] = {}
    correct = np.asarray(correct, dtype=bool)
    for name, values in fields.items():
        groups = np.asarray(values, dtype=object)
        rows = []
        for group in sorted(set(values)):
            mine = correct[groups == group]
            k, n = int(mine.sum()), int(mine.size)
            low, high = wilson_interval(k, n)
            rows.append(Breakdown(group=str(group), n=n, metric=Metric("accuracy", k / n, low, high, "wilson")))
        out[name] = rows
    return out
