"""clinicalqa-open's score: the rubric score with its two-stage and items-only intervals, the judge's
agreement with itself, and each criterion tag's met rate (``medbench.stats.rubric``).

The per-item arrays are rebuilt from the predictions' grade lists, so scoring never calls a model.
"""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import numpy as np
import pyarrow as pa

from medbench.specs import TaskSpec
from medbench.stats.rubric import ITEMS_ONLY_METHOD, TWO_STAGE_METHOD, item_scores, judge_agreement, rubric_interval
from pipelines.tasks.base import ScoreSummary
from pipelines.tasks.clinicalqa_open.scorecard import JudgeScorecard, judge_scorecard, read_reference


class CriterionRate(msgspec.Struct, frozen=True):
    criterion: str      # a criterion tag (answer, distractor, reasoning)
    n: int              # graded criteria of that tag
    met_rate: float     # share met, over all judge samples
    ci_low: float       # Wilson 95% over the criteria (samples pooled)
    ci_high: float
    agreement: float    # share of those criteria whose judge samples all agree


class RubricExtras(msgspec.Struct, frozen=True):
    by_criterion: list[CriterionRate]
    judge_samples: int
    items_only_method: str
    scorecard: JudgeScorecard | None = None  # the judge against reference grades, where there are any


def wilson(k: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    p = float(k) / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return float(max(0.0, c - h)), float(min(1.0, c + h))


def grade_arrays(predictions: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[str]]]:
    """(met [N, K, S], points [N, K], present [N, K], criterion ids per item) from the grade lists."""
    rows = predictions.select(["criterion_id", "judge_sample", "met", "points"]).to_pylist()
    ids_per_item, per = [], []
    for r in rows:
        ids = list(dict.fromkeys(r["criterion_id"]))
        s = max(r["judge_sample"], default=-1) + 1
        ids_per_item.append(ids)
        per.append((ids, s, r))
    n, k = len(rows), max((len(i) for i in ids_per_item), default=0)
    s = max((p[1] for p in per), default=0)
    met = np.zeros((n, k, max(s, 1)), dtype=bool)
    points = np.zeros((n, k))
    present = np.zeros((n, k), dtype=bool)
    for i, (ids, _, r) in enumerate(per):
        pos = {c: j for j, c in enumerate(ids)}
        for c, js, m, p in zip(r["criterion_id"], r["judge_sample"], r["met"], r["points"]):
            met[i, pos[c], js] = m
            points[i, pos[c]] = p
            present[i, pos[c]] = True
    return met, points, present, ids_per_item


def tag_of(criterion_id: str) -> str:
    return "distractor" if criterion_id.startswith("avoid-") else criterion_id


def score_rubric(task: TaskSpec, predictions: pa.Table, instances: Path) -> ScoreSummary:
    met, points, present, ids = grade_arrays(predictions)
    scores = item_scores(met, points)  # [N, S]
    iv = rubric_interval(scores, task.bootstrap.replicates, task.bootstrap.seed)
    agree = judge_agreement(met, present)
    metrics = [("rubric_score", iv.value, iv.ci_low, iv.ci_high, TWO_STAGE_METHOD, "higher", None, None,
                iv.ci_low_items_only, iv.ci_high_items_only)]
    if not math.isnan(agree):
        lo, hi = wilson(agree * present.sum(), int(present.sum()))
        metrics.append(("judge_agreement", agree, lo, hi, "wilson", "higher", None))
    unanimous = met.all(axis=2) | ~met.any(axis=2)
    by_tag: dict[str, list[tuple[float, bool]]] = {}
    for i, item_ids in enumerate(ids):
        for j, c in enumerate(item_ids):
            by_tag.setdefault(tag_of(c), []).append((float(met[i, j].mean()), bool(unanimous[i, j])))
    rates = []
    for tag in sorted(by_tag):
        vals = by_tag[tag]
        rate = float(np.mean([v for v, _ in vals]))
        lo, hi = wilson(rate * len(vals), len(vals))
        rates.append(CriterionRate(tag, len(vals), rate, lo, hi, float(np.mean([u for _, u in vals]))))
    s = task.settings
    card = judge_scorecard(predictions, read_reference(s.reference_grades), s.min_judge_kappa,
                           task.bootstrap.replicates, task.bootstrap.seed)
    if card is not None:
        metrics += [("judge_kappa", card.kappa, card.kappa_low, card.kappa_high, "bootstrap-percentile", "higher", None),
                    ("judge_macro_f1", card.macro_f1, card.macro_f1_low, card.macro_f1_high, "bootstrap-percentile",
                     "higher", None)]
    extras = RubricExtras(by_criterion=rates, judge_samples=int(met.shape[2]), items_only_method=ITEMS_ONLY_METHOD,
                          scorecard=card)
    return ScoreSummary(metrics=metrics, n=predictions.num_rows, parse_rate=None, extras=extras)
