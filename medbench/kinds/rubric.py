"""The ``rubric`` kind: a free-text answer per item, graded by a judge model criterion by criterion.

- Predictions: one row per item, with the answer text, its score (the mean over judge samples of
  sum(met points) / sum(positive points), clipped to [0, 1]; ``medbench.stats.rubric``), the sha256 of
  its criteria (``rubric_sha256``, the item's truth: two results are paired only on the same rubric),
  and the judge's grades as parallel lists, one entry per (criterion, judge sample): ``criterion_id``,
  ``judge_sample``, ``met``, ``justification``, ``points``. The DuckDB file unnests those lists into
  one row per grade (``predictions_rubric``, docs/duckdb.md), the answer repeated on each.
- Metrics: the mean score with the two-stage interval (items, then judge samples) and the
  items-only one (``ci_low_items_only``, ``ci_high_items_only``); ``judge_agreement``.
- Pairing (``/v1/compare``, the difference to the reference model): the same items drawn for both results per
  replicate, the difference of their mean scores; its percentile interval, the p-value inverting it.
  Two judges' results on the same answers compare the same way (docs/adding-a-task.md, "The rubric kind"),
  and ``judges_agreement`` says how often their majority verdicts agree, criterion by criterion.
- Rank intervals: the same draws for every result of a block (``replicate_rank_intervals``).
- Resampling unit: items (a family of this kind declares no cluster column).

Its file name is shared on purpose: each kind's module is named after the kind it implements
(``kind(name)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from medbench.figures import Axis, Figure, Interval
from medbench.kind import BaselineDifference, Columns, Comparison, ComparisonError, RankBlock
from medbench.stats.ranks import replicate_rank_intervals
from medbench.stats.rubric import cohens_kappa

METHOD = "paired bootstrap over items; percentile interval, p-value from inverting it"


def _items_only(cluster_column: str | None) -> None:
    if cluster_column is not None:
        raise ValueError(f"the rubric kind resamples items; it has no cluster form (cluster column "
                         f"{cluster_column!r}): declare cluster_column = None")


def item_draws(n: int, replicates: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(replicates, n))


def percentile_p(diffs: np.ndarray) -> tuple[float, bool]:
    """Smallest two-sided level at which the percentile interval of ``diffs`` excludes 0, floored at
    2/(R+1) (``p_at_floor``)."""
    share = min(float((diffs <= 0).mean()), float((diffs >= 0).mean()))
    floor = 2.0 / (len(diffs) + 1)
    p = max(min(1.0, 2.0 * share), floor)
    return p, p <= floor


def paired_scores(a: np.ndarray, b: np.ndarray, replicates: int, seed: int) -> Comparison:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size == 0:
        raise ComparisonError("the two results share no items")
    draws = item_draws(len(a), replicates, seed)
    diffs = a[draws].mean(axis=1) - b[draws].mean(axis=1)
    low, high = np.percentile(diffs, [2.5, 97.5])
    p, floor = percentile_p(diffs)
    return Comparison(metric="rubric_score", n_shared=len(a), value_a=float(a.mean()), value_b=float(b.mean()),
                      difference=float(a.mean() - b.mean()), ci_low=float(low), ci_high=float(high), p_value=p,
                      p_at_floor=floor, method=f"{METHOD} ({replicates} replicates, seed {seed})",
                      replicates=replicates, seed=seed, dropped_replicates=0, a_only_correct=None,
                      b_only_correct=None)


@dataclass(frozen=True)
class CriterionAgreement:
    """Two judges on one criterion id: over how many graded answers, the share of equal majority
    verdicts and Cohen's kappa."""

    criterion: str
    n: int
    agreement: float
    kappa: float


@dataclass(frozen=True)
class JudgesAgreement:
    """Two judges' majority verdicts on the same answers: items whose answer text is the same in both
    results, graded (item, criterion) pairs, overall agreement and kappa, and per criterion id."""

    n_items: int
    n_grades: int
    agreement: float
    kappa: float
    criteria: list[CriterionAgreement]


def _verdicts(row: Mapping[str, Any]) -> dict[str, bool]:
    """criterion id -> the judge's majority verdict over its samples (more than half met; a tie: not met)."""
    votes: dict[str, list[bool]] = {}
    for c, m in zip(row["criterion_id"] or [], row["met"] or []):
        votes.setdefault(c, []).append(bool(m))
    return {c: sum(v) * 2 > len(v) for c, v in votes.items()}


def judges_agreement(path_a: Path | str, path_b: Path | str) -> JudgesAgreement | None:
    """How two judges' results agree on the answers they share (same instance_id and the same answer
    text): None where they share none (results of two answering models, say)."""
    columns = ["instance_id", "answer", "criterion_id", "met"]
    a = {r["instance_id"]: r for r in pq.read_table(path_a, columns=columns).to_pylist()}
    pairs: dict[str, list[tuple[bool, bool]]] = {}
    n_items = 0
    for rb in pq.read_table(path_b, columns=columns).to_pylist():
        ra = a.get(rb["instance_id"])
        if ra is None or ra["answer"] != rb["answer"]:
            continue
        va, vb = _verdicts(ra), _verdicts(rb)
        shared = sorted(va.keys() & vb.keys())
        if not shared:
            continue
        n_items += 1
        for c in shared:
            pairs.setdefault(c, []).append((va[c], vb[c]))
    if n_items == 0:
        return None

    def stats(v: list[tuple[bool, bool]]) -> tuple[float, float]:
        x = np.array(v, dtype=bool)
        return float((x[:, 0] == x[:, 1]).mean()), float(cohens_kappa(x[:, 0], x[:, 1]))

    every = [p for c in sorted(pairs) for p in pairs[c]]
    agreement, kappa = stats(every)
    criteria = [CriterionAgreement(c, len(pairs[c]), *stats(pairs[c])) for c in sorted(pairs)]
    return JudgesAgreement(n_items, len(every), agreement, kappa, criteria)


class Rubric:
    name = "rubric"
    schema = pa.schema([
        ("instance_id", pa.string()), ("score", pa.float64()), ("answer", pa.string()),
        ("rubric_sha256", pa.string()), ("criterion_id", pa.list_(pa.string())),
        ("judge_sample", pa.list_(pa.int32())), ("met", pa.list_(pa.bool_())),
        ("justification", pa.list_(pa.string())), ("points", pa.list_(pa.float64())),
    ])
    columns_text = ("instance_id, score, answer, rubric_sha256, then per (criterion, judge sample): criterion_id, "
                    "judge_sample, met, justification, points")
    paired_columns = ("score",)
    truth_columns = ("rubric_sha256",)
    sql_types: Mapping[str, str] = {}
    # the list columns the DuckDB table unnests into one row per grade (warehouse.portable)
    sql_unnest = ("criterion_id", "judge_sample", "met", "justification", "points")
    picture = "criterion_bars"
    item_noun = "answers"
    parses_replies = False
    answer_field = "answer"  # an official package returns the free-text answer; medbench judges it
    legacy_method = "two-stage-bootstrap-percentile"
    comparison_method = ("rubric score difference: paired bootstrap over items with the task's replicates and seed; "
                         "percentile interval, the p-value inverts it (p < 0.05 exactly when the interval excludes "
                         "0), at least 2/(R+1)")

    def compare(self, a: Columns, b: Columns, cluster_column: str | None, replicates: int,
                seed: int) -> Comparison:
        _items_only(cluster_column)
        if "rubric_sha256" in a and "rubric_sha256" in b and not np.array_equal(a["rubric_sha256"], b["rubric_sha256"]):
            raise ComparisonError("the two results grade a shared item against different rubrics")
        return paired_scores(a["score"], b["score"], replicates, seed)

    def baseline_difference(self, a: Columns, b: Columns, cluster_column: str | None, replicates: int,
                            seed: int) -> BaselineDifference | None:
        _items_only(cluster_column)
        if len(a["score"]) == 0:
            return None
        c = paired_scores(a["score"], b["score"], replicates, seed)
        return BaselineDifference(metric=c.metric, difference=c.difference, ci_low=c.ci_low, ci_high=c.ci_high,
                                  p_value=c.p_value, method="paired-bootstrap-percentile", dropped_replicates=0,
                                  p_at_floor=c.p_at_floor)

    def rank_intervals(self, aligned: Sequence[Columns], cluster_column: str | None, replicates: int,
                       seed: int) -> RankBlock:
        _items_only(cluster_column)
        scores = np.stack([c["score"].astype(np.float64) for c in aligned])  # [M, N]
        draws = item_draws(scores.shape[1], replicates, seed)
        values = np.stack([s[draws].mean(axis=1) for s in scores], axis=1)  # [R, M]
        point = np.arange(1, len(aligned) + 1)
        return RankBlock(replicate_rank_intervals(scores.mean(axis=1), values, point, "higher"), scores.shape[1],
                         "joint paired bootstrap over items; tie: paired percentile interval")

    def check_answer(self, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError(f"answer must be a string, got {type(value).__name__}")
        return value

    def figures(self, extras: Mapping[str, Any], metrics: Mapping[str, float]) -> list[Figure]:
        """Each criterion tag's met rate with its judge agreement (extras ``by_criterion``:
        {criterion, n, met_rate, ci_low, ci_high, agreement})."""
        rows = extras.get("by_criterion") if isinstance(extras, Mapping) else None
        if not isinstance(rows, list) or not rows or not all(isinstance(r, Mapping) for r in rows):
            return []
        try:
            intervals = [Interval(label=f"{r['criterion']} (judge agreement {float(r['agreement']):.0%})",
                                  value=float(r["met_rate"]), ci_low=float(r["ci_low"]),
                                  ci_high=float(r["ci_high"]), n=int(r["n"])) for r in rows]
        except (KeyError, TypeError, ValueError):
            return []
        return [Figure(id="by-criterion", title="Met rate by criterion, with the judge's agreement",
                       caption="The share of graded answers on which the judge found each criterion met (all "
                               "judge samples); in brackets, the share of answers on which every sample agreed",
                       x=Axis(title="Met rate", low=0.0, high=1.0), intervals=intervals)]

    def unparsed_sample(self, extras: Mapping[str, Any]) -> list[tuple[str, str]] | None:
        return None

    def served_extras(self, extras: Mapping[str, Any]) -> dict[str, Any]:
        return dict(extras)

    def chance(self, primary_metric: str, spec: Mapping[str, Any]) -> float | None:
        return None

    def board_judge(self, spec: Mapping[str, Any], demo: bool) -> str | None:
        """The judge whose results make the task's leaderboard and lookups: the ``judge`` of the spec's
        settings table (``demo_judge`` on demo data, where set); results by other judges are reached
        with ``?judge=`` and compare."""
        for value in spec.values():
            if isinstance(value, Mapping) and isinstance(value.get("judge"), str):
                demo_judge = value.get("demo_judge")
                return demo_judge if demo and isinstance(demo_judge, str) and demo_judge else value["judge"]
        return None
