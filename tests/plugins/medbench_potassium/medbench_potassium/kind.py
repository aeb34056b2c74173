"""The ``regression`` kind: one number per item (``predicted``) against an observed number
(``observed``), scored by the mean absolute error; lower is better.

- Metrics: MAE (primary), RMSE and bias (mean of predicted - observed; best at 0), each with a 95%
  percentile interval from a cluster bootstrap over the family's cluster column (the patient):
  replicate r draws C clusters with repetition, ``default_rng(seed).integers(0, C, size=(R, C))[r]``,
  each with all its items.
- Pairing: the same draws for both results; the difference is MAE(A) - MAE(B) per replicate, its
  percentile interval, and the p-value inverts that interval (p < 0.05 exactly when it excludes 0).
- Rank intervals: the same draws for every result of a leaderboard block at once, ranked by MAE
  ascending (``pipelines.stats.ranks.replicate_rank_intervals`` with direction "lower").
- Its figure: observed against predicted, the mean of each by tenth of the predictions, with the
  identity line (extras ``by_decile``).

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from pipelines.core.figures import Axis, Figure, lines
from pipelines.core.kind import BaselineDifference, Columns, Comparison, ComparisonError, RankBlock, resampling_unit
from pipelines.stats.ranks import replicate_rank_intervals

METHOD = "cluster-bootstrap-percentile"


def cluster_weights(clusters: np.ndarray, replicates: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(index of each item's cluster [N], times each cluster is drawn per replicate [R, C])."""
    _, index = np.unique(np.asarray(clusters), return_inverse=True)
    c = int(index.max()) + 1 if len(index) else 0
    draws = np.random.default_rng(seed).integers(0, c, size=(replicates, c))
    weights = np.zeros((replicates, c), dtype=np.float64)
    np.add.at(weights, (np.repeat(np.arange(replicates), c), draws.reshape(-1)), 1.0)
    return index, weights


def replicate_means(values: np.ndarray, index: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The mean of ``values`` over each replicate's drawn clusters (all their items), [R]."""
    sums = np.bincount(index, weights=values, minlength=weights.shape[1])
    counts = np.bincount(index, minlength=weights.shape[1]).astype(np.float64)
    return (weights @ sums) / np.maximum(weights @ counts, 1.0)


def _interval(reps: np.ndarray) -> tuple[float, float]:
    low, high = np.percentile(reps, [2.5, 97.5])
    return float(low), float(high)


def regression_metrics(predicted, observed, clusters, replicates: int, seed: int) -> list[tuple]:
    """MAE, RMSE and bias with their cluster-bootstrap intervals, as ``ScoreSummary.metrics`` rows."""
    err = np.asarray(predicted, dtype=np.float64) - np.asarray(observed, dtype=np.float64)
    index, weights = cluster_weights(clusters, replicates, seed)
    mae_r = replicate_means(np.abs(err), index, weights)
    rmse_r = np.sqrt(replicate_means(err ** 2, index, weights))
    bias_r = replicate_means(err, index, weights)
    return [("mae", float(np.abs(err).mean()), *_interval(mae_r), METHOD, "lower", None),
            ("rmse", float(np.sqrt((err ** 2).mean())), *_interval(rmse_r), METHOD, "lower", None),
            ("bias", float(err.mean()), *_interval(bias_r), METHOD, "target", 0.0)]


def _clusters(columns: Columns, cluster_column: str | None) -> np.ndarray:
    return np.arange(len(columns["observed"])) if cluster_column is None else np.asarray(columns[cluster_column])


def _abs_errors(columns: Columns) -> np.ndarray:
    return np.abs(columns["predicted"].astype(np.float64) - columns["observed"].astype(np.float64))


def percentile_p(diffs: np.ndarray) -> tuple[float, bool]:
    """The smallest two-sided level at which the percentile interval of ``diffs`` excludes 0, with
    the floor 2/(R+1) (``p_at_floor``)."""
    r = len(diffs)
    share = min(float((diffs <= 0).mean()), float((diffs >= 0).mean()))
    floor = 2.0 / (r + 1)
    p = max(min(1.0, 2.0 * share), floor)
    return p, p <= floor


class Regression:
    name = "regression"
    schema = pa.schema([("instance_id", pa.string()), ("predicted", pa.float64()), ("observed", pa.float64())])
    columns_text = "instance_id, predicted, observed, then the task family's own columns (its cluster column among them)"
    paired_columns = ("predicted", "observed")
    truth_columns = ("observed",)
    sql_types = {"predicted": "DOUBLE", "observed": "DOUBLE"}
    picture = "predicted_vs_observed"
    item_noun = "measurements"
    parses_replies = False
    answer_field = "value"
    legacy_method = METHOD
    comparison_method = ("MAE difference: paired cluster bootstrap over the task's cluster column, with the task's "
                         "replicates and seed; percentile interval, and the p-value inverts it (at least 2/(R+1))")

    def _paired(self, a: Columns, b: Columns, cluster_column: str | None, replicates: int, seed: int):
        if len(a["observed"]) == 0:
            raise ComparisonError("the two results share no items")
        if not np.array_equal(a["observed"], b["observed"]):
            raise ComparisonError("the two results disagree on the observed value of a shared item")
        index, weights = cluster_weights(_clusters(a, cluster_column), replicates, seed)
        ea, eb = _abs_errors(a), _abs_errors(b)
        diffs = replicate_means(ea, index, weights) - replicate_means(eb, index, weights)
        low, high = _interval(diffs)
        p, at_floor = percentile_p(diffs)
        return float(ea.mean()), float(eb.mean()), low, high, p, at_floor, weights.shape[1]

    def compare(self, a: Columns, b: Columns, cluster_column: str | None, replicates: int, seed: int) -> Comparison:
        va, vb, low, high, p, at_floor, n_clusters = self._paired(a, b, cluster_column, replicates, seed)
        return Comparison(
            metric="mae", n_shared=len(a["observed"]), value_a=va, value_b=vb, difference=va - vb, ci_low=low,
            ci_high=high, p_value=p, p_at_floor=at_floor,
            method=f"paired cluster bootstrap over {n_clusters} {resampling_unit(cluster_column)} ({replicates} "
                   f"replicates, seed {seed}); percentile interval, p-value from inverting it",
            replicates=replicates, seed=seed, dropped_replicates=0, a_only_correct=None, b_only_correct=None)

    def baseline_difference(self, a: Columns, b: Columns, cluster_column: str | None, replicates: int,
                            seed: int) -> BaselineDifference | None:
        if len(a["observed"]) == 0:
            return None
        va, vb, low, high, p, at_floor, _ = self._paired(a, b, cluster_column, replicates, seed)
        return BaselineDifference(metric="mae", difference=va - vb, ci_low=low, ci_high=high, p_value=p,
                                  method=METHOD, dropped_replicates=0, p_at_floor=at_floor)

    def rank_intervals(self, aligned: Sequence[Columns], cluster_column: str | None, replicates: int,
                       seed: int) -> RankBlock:
        index, weights = cluster_weights(_clusters(aligned[0], cluster_column), replicates, seed)
        errors = [_abs_errors(c) for c in aligned]
        estimates = np.array([e.mean() for e in errors])
        reps = np.stack([replicate_means(e, index, weights) for e in errors], axis=1)
        iv = replicate_rank_intervals(estimates, reps, np.arange(1, len(aligned) + 1), direction="lower")
        return RankBlock(iv, len(errors[0]), f"joint paired cluster bootstrap over {resampling_unit(cluster_column)} "
                                             "of MAE (lower is better); tie: paired percentile interval")

    def check_answer(self, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"value must be a finite number, got {str(value)[:40]}")
        return float(value)

    def figures(self, extras: Mapping[str, Any], metrics: Mapping[str, float]) -> list[Figure]:
        deciles = extras.get("by_decile") if isinstance(extras, Mapping) else None
        if not isinstance(deciles, Mapping) or not deciles.get("predicted"):
            return []
        pred, obs = list(deciles["predicted"]), list(deciles["observed"])
        low, high = min(pred + obs), max(pred + obs)
        mae = metrics.get("mae")
        return [lines("predicted-vs-observed", f"Observed against predicted on the test {self.item_noun}",
                      "Mean observed value against mean prediction, by tenth of the predictions; the dashed line "
                      "is a perfect prediction" + (f"; MAE {mae:.3f}" if mae is not None else ""),
                      Axis(title="Predicted"), Axis(title="Observed"),
                      [("model", pred, obs, "points"), ("observed = predicted", [low, high], [low, high], "dashed")])]

    def unparsed_sample(self, extras: Mapping[str, Any]) -> list[tuple[str, str]] | None:
        return None

    def served_extras(self, extras: Mapping[str, Any]) -> dict[str, Any]:
        return dict(extras)

    def chance(self, primary_metric: str, spec: Mapping[str, Any]) -> float | None:
        return None
