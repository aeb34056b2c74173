"""The ``score`` kind: one number per item against a 0/1 label, scored by AUROC.

- Resampling unit: the family's cluster column (``cluster_column``, recorded in the warehouse's
  ``tasks`` table): items of one cluster are not independent, so every interval is a cluster
  bootstrap over its sorted unique values (``medbench.stats.auroc``). Without a cluster column each
  item is its own cluster, which is the plain paired bootstrap over items.
- Pairing: replicate r takes the clusters ``default_rng(seed).integers(0, C, size=(R, C))[r]`` (with
  repetition) and all their items, for *both* results at once, and records AUROC(A) - AUROC(B) on
  that resample. A replicate holding one class only has no AUROC; it is left out and counted. The
  interval is the 2.5th and 97.5th percentiles of the kept differences; the p-value is that
  interval inverted (``medbench.stats.paired_auroc.percentile_test``: the smallest two-sided level
  at which the percentile interval of the same differences excludes 0), so p < 0.05 exactly when
  the interval excludes 0. Its floor is 2 / (R + 1) over the R kept differences (Davison and
  Hinkley): a p at the floor carries ``p_at_floor`` and reads "p <= 2/(R+1)", not an exact value.
- Rank intervals: the same draws for every result of a leaderboard block at once
  (``medbench.stats.ranks``), the tie with the leader by the paired percentile interval.

Its file name is shared on purpose: each kind's module is named after the kind it implements
(``kind(name)``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from medbench.figures import Axis, Figure, get_mapping, lines
from medbench.kind import BaselineDifference, Columns, Comparison, ComparisonError, RankBlock, resampling_unit
from medbench.stats.paired_auroc import METHOD as BASELINE_METHOD
from medbench.stats.paired_auroc import paired_auroc_difference
from medbench.stats.ranks import auroc_rank_intervals

CHANCE_AUROC = 0.5


def cluster_values(columns: Columns, cluster_column: str | None) -> np.ndarray:
    """Each aligned item's cluster: its cluster column's value, or its own position (no column)."""
    if cluster_column is None:
        return np.arange(len(columns["label"]))
    return columns[cluster_column]


def paired_auroc(scores_a, scores_b, labels, clusters, replicates: int, seed: int,
                 unit: str = "clusters") -> Comparison:
    """The paired cluster-bootstrap AUROC difference; ``unit`` names the clusters in ``method``."""
    y = np.asarray(labels).reshape(-1).astype(bool)
    if len(y) == 0:
        raise ComparisonError("the two results share no items")
    if y.all() or not y.any():
        raise ComparisonError("the shared items hold one class only: AUROC is undefined")
    if not np.isfinite(np.asarray(scores_a, dtype=np.float64)).all() or not np.isfinite(
        np.asarray(scores_b, dtype=np.float64)
    ).all():
        raise ComparisonError("scores contain NaN or infinity")
    d = paired_auroc_difference(scores_a, scores_b, y, clusters, replicates, seed)
    if d is None:
        raise ComparisonError("every bootstrap replicate held one class only")
    return Comparison(
        metric="auroc", n_shared=len(y), value_a=d.value_a, value_b=d.value_b, difference=d.difference,
        ci_low=d.ci_low, ci_high=d.ci_high, p_value=d.p_value, p_at_floor=d.p_at_floor,
        method=f"paired cluster bootstrap over {d.n_clusters} {unit} ({replicates} replicates, seed {seed}); "
        "percentile interval, p-value from inverting it",
        replicates=replicates, seed=seed, dropped_replicates=d.dropped,
        a_only_correct=None, b_only_correct=None,
    )


class Score:
    name = "score"
    schema = pa.schema([("instance_id", pa.string()), ("score", pa.float64()), ("label", pa.int8())])
    columns_text = "instance_id, score, label, then the task family's own columns (its cluster column among them)"
    paired_columns = ("score", "label")
    truth_columns = ("label",)
    sql_types = {"label": "INTEGER"}  # 0/1, so avg(label) is the event rate
    picture = "roc_curve"
    item_noun = "windows"  # what one prediction is about, in the site's words
    parses_replies = False
    answer_field = "score"  # a probability of the event
    legacy_method = "cluster-bootstrap-percentile"
    comparison_method = ("AUROC difference: paired cluster bootstrap over the task's cluster column (items without "
                         "one), with the task's replicates and seed; percentile interval, and the p-value inverts it "
                         "(p < 0.05 exactly when the interval excludes 0), at least 2/(R+1) over the R kept "
                         "replicates (p_at_floor: p is at most that)")

    def compare(self, a: Columns, b: Columns, cluster_column: str | None, replicates: int,
                seed: int) -> Comparison:
        same = np.array_equal(a["label"], b["label"]) and (
            cluster_column is None or np.array_equal(a[cluster_column], b[cluster_column]))
        if not same:
            raise ComparisonError(f"the two results disagree on the label or the cluster ({cluster_column}) "
                                  "of a shared item")
        return paired_auroc(a["score"], b["score"], a["label"], cluster_values(a, cluster_column), replicates,
                            seed, resampling_unit(cluster_column))

    def baseline_difference(self, a: Columns, b: Columns, cluster_column: str | None, replicates: int,
                            seed: int) -> BaselineDifference | None:
        d = paired_auroc_difference(a["score"], b["score"], a["label"], cluster_values(a, cluster_column),
                                    replicates, seed)
        if d is None:
            return None
        return BaselineDifference(metric="auroc", difference=d.difference, ci_low=d.ci_low, ci_high=d.ci_high,
                                  p_value=d.p_value, method=BASELINE_METHOD, dropped_replicates=d.dropped,
                                  p_at_floor=d.p_at_floor)

    def rank_intervals(self, aligned: Sequence[Columns], cluster_column: str | None, replicates: int,
                       seed: int) -> RankBlock:
        scores = np.stack([c["score"].astype(np.float64) for c in aligned])
        point = np.arange(1, len(aligned) + 1)
        iv = auroc_rank_intervals(scores, aligned[0]["label"], cluster_values(aligned[0], cluster_column),
                                  replicates, seed, point)
        unit = resampling_unit(cluster_column)
        return RankBlock(iv, scores.shape[1], f"joint paired cluster bootstrap over {unit}; tie: paired percentile interval")

    def check_answer(self, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= 1:
            raise ValueError(f"score must be a finite number in [0, 1], got {str(value)[:40]}")
        return float(value)

    def figures(self, extras: Mapping[str, Any], metrics: Mapping[str, float]) -> list[Figure]:
        """The ROC curve (every score family's extras ``roc``), and where a family reports them the
        calibration and decision curves (``calibration_curve``, ``decision_curve``)."""
        out = []
        roc = get_mapping(extras, "roc")
        if roc and roc.get("fpr") and roc.get("tpr"):
            auroc = metrics.get("auroc")
            out.append(lines("roc-curve", f"ROC curve on the test {self.item_noun}",
                             "True against false positive rate over every threshold; the dashed diagonal is chance"
                             + (f"; AUROC {auroc:.3f}" if auroc is not None else ""),
                             Axis(title="False positive rate", low=0.0, high=1.0),
                             Axis(title="True positive rate", low=0.0, high=1.0),
                             [("model", roc["fpr"], roc["tpr"], "line"), ("chance", [0, 1], [0, 1], "dashed")]))
        cal = get_mapping(extras, "calibration_curve")
        if cal and cal.get("predicted") and cal.get("observed"):
            high = max(0.1, min(1.0, max([*cal["predicted"], *cal["observed"], 0.0]) * 1.1))
            out.append(lines("calibration-curve", f"Calibration curve on the test {self.item_noun}",
                             "Observed event rate against the mean predicted probability per bin; the dashed line "
                             "is perfect calibration",
                             Axis(title="Mean predicted probability", low=0.0, high=high),
                             Axis(title="Observed rate", low=0.0, high=high),
                             [("model", cal["predicted"], cal["observed"], "points"),
                              ("ideal (observed = predicted)", [0, high], [0, high], "dashed")]))
        dec = get_mapping(extras, "decision_curve")
        if dec and dec.get("thresholds") and dec.get("model") and dec.get("treat_all"):
            th = dec["thresholds"]
            out.append(lines("decision-curve", "Decision curve: net benefit against treat all and treat none",
                             "Net benefit of acting on the model's predictions at each threshold probability",
                             Axis(title="Threshold probability", low=0.0), Axis(title="Net benefit"),
                             [("model", th, dec["model"], "line"), ("treat all", th, dec["treat_all"], "dashed"),
                              ("treat none", [0, max(th)], [0, 0], "dashed")]))
        return out

    def unparsed_sample(self, extras: Mapping[str, Any]) -> list[tuple[str, str]] | None:
        return None  # nothing is parsed

    def served_extras(self, extras: Mapping[str, Any]) -> dict[str, Any]:
        return dict(extras)

    def chance(self, primary_metric: str, spec: Mapping[str, Any]) -> float | None:
        return CHANCE_AUROC if primary_metric == "auroc" else None
