"""Rubric grading's statistics: item scores, the two-stage bootstrap, judge agreement and the judge's
scorecard against reference grades (docs/statistics.md, "Rubric scores and the judge's uncertainty").

- Item score: the points of the criteria the judge found met over the item's positive points,
  clipped to [0, 1] (negative points, for recommending a distractor, can take it below 0 before the
  clip). With S judge samples an item has S scores, one per sample; its score is their mean.
- Two-stage bootstrap: replicate r draws N items with replacement (stage 1) and, for each drawn
  item, S of its S judge samples with replacement (stage 2); the replicate's value is the mean of
  the drawn items' means over their drawn samples. The judge's sampling is thus inside the
  interval, as the items' is. The items-only interval keeps each item's judged score as graded
  (stage 1 alone): the difference in width is the judge's share.
- ``judge_agreement``: the share of (item, criterion) pairs on which all S samples agree (1.0 with
  one sample: nothing to disagree with).
- Scorecard: the judge's majority verdict per criterion against a physician's reference grade:
  macro F1 (the mean of the F1 of "met" and of "not met") and Cohen's kappa, each with a percentile
  interval from a bootstrap over the graded items (an item's criteria drawn together).

numpy only (this package's rule), so the API may import it.

Its file name is shared on purpose: the statistics are computed here; the module of the same name
elsewhere serves or measures them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TWO_STAGE_METHOD = "two-stage-bootstrap-percentile"  # items, then judge samples within each item
ITEMS_ONLY_METHOD = "bootstrap-percentile"


def item_scores(met: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Per item and judge sample, sum(met points) / sum(positive points), clipped to [0, 1].

    ``met``: bool [N, K, S] (criterion k of item i met in sample s); ``points``: float [N, K], 0 where
    an item has fewer than K criteria (padding). An item without positive points scores 0."""
    met = np.asarray(met, dtype=bool)
    pts = np.asarray(points, dtype=np.float64)
    if met.ndim != 3 or pts.shape != met.shape[:2]:
        raise ValueError(f"met must be [N, K, S] and points [N, K]; got {met.shape} and {pts.shape}")
    possible = np.clip(pts, 0, None).sum(axis=1)  # [N]
    earned = np.einsum("iks,ik->is", met.astype(np.float64), pts)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(possible[:, None] > 0, earned / np.where(possible > 0, possible, 1.0)[:, None], 0.0)
    return np.clip(raw, 0.0, 1.0)


@dataclass(frozen=True)
class RubricInterval:
    value: float          # the mean over items of each item's mean over judge samples
    ci_low: float         # two-stage: items and judge samples
    ci_high: float
    ci_low_items_only: float  # items alone, each item's judged score held as graded
    ci_high_items_only: float


def two_stage_draws(n: int, s: int, replicates: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(items [R, N], judge samples [R, N, S]) of the two-stage bootstrap, from one seeded generator;
    every result of a comparison or a leaderboard block uses the same draws."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(replicates, n)), rng.integers(0, s, size=(replicates, n, s))


def two_stage_replicates(scores: np.ndarray, items: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """The mean score of each replicate [R] from per-item, per-sample scores [N, S]."""
    scores = np.asarray(scores, dtype=np.float64)
    drawn = scores[items[:, :, None], samples]  # [R, N, S]
    return drawn.mean(axis=(1, 2))


def rubric_interval(scores: np.ndarray, replicates: int, seed: int) -> RubricInterval:
    """The result's value with its two-stage and items-only 95% percentile intervals."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] == 0 or scores.shape[1] == 0:
        raise ValueError(f"scores must be a non-empty [items, judge samples] array, got shape {scores.shape}")
    items, samples = two_stage_draws(scores.shape[0], scores.shape[1], replicates, seed)
    both = two_stage_replicates(scores, items, samples)
    only = scores.mean(axis=1)[items].mean(axis=1)
    lo, hi = np.percentile(both, [2.5, 97.5])
    lo_i, hi_i = np.percentile(only, [2.5, 97.5])
    return RubricInterval(float(scores.mean()), float(lo), float(hi), float(lo_i), float(hi_i))


def judge_agreement(met: np.ndarray, present: np.ndarray) -> float:
    """Share of the present (item, criterion) pairs whose S judge samples all agree.

    ``met``: bool [N, K, S]; ``present``: bool [N, K] (False for padding)."""
    met = np.asarray(met, dtype=bool)
    mask = np.asarray(present, dtype=bool)
    if not mask.any():
        return float("nan")
    unanimous = met.all(axis=2) | ~met.any(axis=2)
    return float(unanimous[mask].mean())


def majority(met: np.ndarray) -> np.ndarray:
    """The judge's verdict per (item, criterion): met by more than half its samples (a tie: not met)."""
    met = np.asarray(met, dtype=bool)
    return met.sum(axis=2) * 2 > met.shape[2]


def macro_f1(judge: np.ndarray, reference: np.ndarray) -> float:
    """The mean of the F1 of the class "met" and of the class "not met" (a class absent from both: F1 1)."""
    j, r = np.asarray(judge, dtype=bool), np.asarray(reference, dtype=bool)
    f1s = []
    for cls in (True, False):
        tp = float(((j == cls) & (r == cls)).sum())
        fp = float(((j == cls) & (r != cls)).sum())
        fn = float(((j != cls) & (r == cls)).sum())
        f1s.append(1.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(f1s))


def cohens_kappa(judge: np.ndarray, reference: np.ndarray) -> float:
    """Cohen's kappa of two binary raters; 1.0 where expected agreement is 1 and they agree fully."""
    j, r = np.asarray(judge, dtype=bool), np.asarray(reference, dtype=bool)
    if len(j) == 0:
        return float("nan")
    observed = float((j == r).mean())
    pj, pr = float(j.mean()), float(r.mean())
    expected = pj * pr + (1 - pj) * (1 - pr)
    if expected >= 1.0:
        return 1.0 if observed >= 1.0 else 0.0
    return (observed - expected) / (1 - expected)


@dataclass(frozen=True)
class Scorecard:
    n_items: int
    n_criteria: int
    macro_f1: float
    macro_f1_low: float
    macro_f1_high: float
    kappa: float
    kappa_low: float
    kappa_high: float


def scorecard(judge: np.ndarray, reference: np.ndarray, item_of: np.ndarray, replicates: int,
              seed: int) -> Scorecard:
    """The judge's verdicts against reference grades, one entry per graded criterion, with each
    criterion's item (``item_of``): both statistics and their percentile intervals from a bootstrap
    over items (all of an item's criteria drawn together)."""
    j, r = np.asarray(judge, dtype=bool), np.asarray(reference, dtype=bool)
    _, index = np.unique(np.asarray(item_of), return_inverse=True)
    n = int(index.max()) + 1 if len(index) else 0
    if n == 0:
        raise ValueError("no reference grades")
    members = [np.flatnonzero(index == k) for k in range(n)]
    rng = np.random.default_rng(seed)
    f1s, kappas = np.empty(replicates), np.empty(replicates)
    for rep, draw in enumerate(rng.integers(0, n, size=(replicates, n))):
        rows = np.concatenate([members[k] for k in draw])
        f1s[rep], kappas[rep] = macro_f1(j[rows], r[rows]), cohens_kappa(j[rows], r[rows])
    f_lo, f_hi = np.percentile(f1s, [2.5, 97.5])
    k_lo, k_hi = np.nanpercentile(kappas, [2.5, 97.5])
    return Scorecard(n, len(j), macro_f1(j, r), float(f_lo), float(f_hi), cohens_kappa(j, r), float(k_lo),
                     float(k_hi))
