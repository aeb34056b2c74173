"""The ``choice`` kind: one answer per item out of a few options, scored by accuracy.

- Pairing: exact per item. With b = items only A got right and c = items only B got right, the
  p-value is the exact McNemar test and the 95% interval its conditional exact counterpart
  (``medbench.stats.paired``): Clopper-Pearson on b/(b+c) mapped to the difference. The interval
  excludes 0 exactly when p < 0.05, so the two never disagree (a percentile bootstrap interval next
  to an exact test can). ``replicates`` and ``seed`` are reported but not used.
- Rank intervals: a joint paired bootstrap over items (``medbench.stats.ranks``), the tie with the
  leader by the same exact interval.
- Resampling unit: items. A family of this kind declares no cluster column (the accuracy bootstrap
  has no cluster form); one that does is refused rather than silently resampled by item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from medbench.figures import Axis, Figure, Interval
from medbench.kind import BaselineDifference, Columns, Comparison, ComparisonError, RankBlock
from medbench.stats.paired import mcnemar_exact_p, paired_accuracy_from_correct
from medbench.stats.ranks import accuracy_rank_intervals

METHOD = "exact McNemar test; conditional exact (Clopper-Pearson on b/(b+c)) interval for the difference"
BASELINE_METHOD = "exact-mcnemar"
UNPARSED = "unparsed_sample"  # the extras key of the first unparsed outputs (served as a field of its own)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p-value from the two discordant counts (1.0 when both are 0)."""
    return mcnemar_exact_p(a_only, b_only)


def paired_accuracy(correct_a, correct_b, replicates: int, seed: int) -> Comparison:
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("correct_a and correct_b must be 1-d arrays of the same length")
    if a.size == 0:
        raise ComparisonError("the two results share no items")
    exact = paired_accuracy_from_correct(a, b)
    return Comparison(
        metric="accuracy", n_shared=int(a.size), value_a=float(a.mean()), value_b=float(b.mean()),
        difference=exact.difference, ci_low=exact.ci_low, ci_high=exact.ci_high, p_value=exact.p_value,
        method=METHOD, replicates=replicates, seed=seed, dropped_replicates=0,
        a_only_correct=exact.b, b_only_correct=exact.c,
    )


def _items_only(cluster_column: str | None) -> None:
    if cluster_column is not None:
        raise ValueError(f"the choice kind resamples items; it has no cluster form (cluster column "
                         f"{cluster_column!r}): declare cluster_column = None")


class Choice:
    name = "choice"
    schema = pa.schema([
        ("instance_id", pa.string()), ("prediction", pa.string()), ("label", pa.string()),
        ("correct", pa.bool_()), ("parse_status", pa.string()), ("raw_output", pa.string()),
    ])
    columns_text = "instance_id, prediction, label, correct, parse_status, raw_output"
    paired_columns = ("correct", "label")
    truth_columns = ("label",)
    sql_types = {"label": "VARCHAR"}  # the letter
    picture = "category_bars"
    item_noun = "items"
    parses_replies = True
    answer_field = "output"  # the raw reply, parsed by the task's parser
    legacy_method = "bootstrap-percentile"
    comparison_method = ("accuracy difference: " + METHOD + "; the interval excludes 0 exactly when p < 0.05, and an "
                         "exact test has no p-value floor")

    def compare(self, a: Columns, b: Columns, cluster_column: str | None, replicates: int,
                seed: int) -> Comparison:
        _items_only(cluster_column)
        if not np.array_equal(a["label"], b["label"]):
            raise ComparisonError("the two results disagree on the gold label of a shared item")
        return paired_accuracy(a["correct"].astype(bool), b["correct"].astype(bool), replicates, seed)

    def baseline_difference(self, a: Columns, b: Columns, cluster_column: str | None, replicates: int,
                            seed: int) -> BaselineDifference | None:
        _items_only(cluster_column)
        if len(a["correct"]) == 0:
            return None
        c = paired_accuracy(a["correct"].astype(bool), b["correct"].astype(bool), replicates, seed)
        return BaselineDifference(metric=c.metric, difference=c.difference, ci_low=c.ci_low, ci_high=c.ci_high,
                                  p_value=c.p_value, method=BASELINE_METHOD, dropped_replicates=0)

    def rank_intervals(self, aligned: Sequence[Columns], cluster_column: str | None, replicates: int,
                       seed: int) -> RankBlock:
        _items_only(cluster_column)
        correct = np.stack([c["correct"].astype(bool) for c in aligned])
        point = np.arange(1, len(aligned) + 1)
        return RankBlock(accuracy_rank_intervals(correct, replicates, seed, point), correct.shape[1],
                         "joint paired bootstrap over items; tie: exact McNemar-dual interval")

    def check_answer(self, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError(f"output must be a string, got {type(value).__name__}")
        return value

    def figures(self, extras: Mapping[str, Any], metrics: Mapping[str, float]) -> list[Figure]:
        """Accuracy by category (the extras ``by_category``: {category, n, accuracy, ci_low, ci_high})."""
        rows = extras.get("by_category") if isinstance(extras, Mapping) else None
        if not isinstance(rows, list) or not rows or not all(isinstance(r, Mapping) for r in rows):
            return []
        try:
            intervals = [Interval(label=str(r["category"]), value=float(r["accuracy"]), ci_low=float(r["ci_low"]),
                                  ci_high=float(r["ci_high"]), n=int(r["n"])) for r in rows]
        except (KeyError, TypeError, ValueError):
            return []
        return [Figure(id="by-category", title="Accuracy by category, with 95% intervals",
                       caption="Accuracy on the items of each category, a bar from 0 with its 95% interval",
                       x=Axis(title="Accuracy", low=0.0, high=1.0), intervals=intervals)]

    def unparsed_sample(self, extras: Mapping[str, Any]) -> list[tuple[str, str]] | None:
        """The first outputs the parser could not read (the extras ``unparsed_sample``), when recorded."""
        sample = extras.get(UNPARSED) if isinstance(extras, Mapping) else None
        if not isinstance(sample, list):
            return None
        return [(str(u["instance_id"]), str(u["output"])) for u in sample if isinstance(u, Mapping)]

    def served_extras(self, extras: Mapping[str, Any]) -> dict[str, Any]:
        """The extras as a result serves them: the unparsed sample has a field of its own."""
        return {k: v for k, v in extras.items() if k != UNPARSED}

    def chance(self, primary_metric: str, spec: Mapping[str, Any]) -> float | None:
        """1 / the number of options, read from the task's settings table that lists ``options``."""
        if primary_metric != "accuracy":
            return None
        for value in spec.values():
            if isinstance(value, Mapping) and isinstance(value.get("options"), list) and value["options"]:
                return 1.0 / len(value["options"])
        return None
