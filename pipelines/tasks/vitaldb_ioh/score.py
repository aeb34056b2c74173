"""Metrics of a score task (vitaldb-ioh) from its predictions: AUROC with a cluster-bootstrap 95% CI
over test subjects (replicates with one class are left out and counted), AUPRC and prevalence,
plus the counts and ROC points the site draws (the typed ``IohExtras``); and, when the task's
``[ioh.reporting]`` is given, the clinical report from the *same* replicate draws: Brier score,
calibration intercept and slope, operating points, net benefit, the calibration and decision
curves, and the subgroups by sex and age band (``reporting.py``).

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import math

import msgspec
import numpy as np
import pyarrow as pa

from medbench.outcomes import ScoreSummary
from medbench.specs import BootstrapSpec, IntervalsSpec
from medbench.stats.auroc import cluster_bootstrap, resample_cluster_counts, roc_points
from medbench.stats.clinical import MetricRow, clinical_report
from medbench.stats.intervals import level
from medbench.stats.validity import gate, reason
from pipelines.tasks.vitaldb_ioh.reporting import (RECALIBRATED, age_band, probabilities_of, replicate_fits,
                                                   subgroup_rows, validation_fits)
from pipelines.tasks.vitaldb_ioh.settings import IohReporting
from medbench.records import MetricValue, Subgroup


class RocPoints(msgspec.Struct, frozen=True):
    fpr: list[float]
    tpr: list[float]


class IohCounts(msgspec.Struct, frozen=True):
    windows: int
    positives: int
    cases: int
    subjects: int


class CalibrationCurve(msgspec.Struct, frozen=True):
    """Quantile bins of the predicted probability: mean predicted, observed rate (95% CI), windows."""

    predicted: list[float]
    observed: list[float]
    observed_low: list[float]
    observed_high: list[float]
    n: list[int]


class DecisionCurve(msgspec.Struct, frozen=True):
    """Net benefit of the model and of treat-all at each threshold; treat-none is 0 throughout."""

    thresholds: list[float]
    model: list[float]
    treat_all: list[float]


class IohExtras(msgspec.Struct, frozen=True):
    """A vitaldb-ioh result's ``extras``: the ROC curve, the test counts, dropped bootstrap replicates."""

    roc: RocPoints
    counts: IohCounts
    bootstrap_dropped_replicates: int  # one-class replicates, left out of the AUROC/AUPRC intervals
    bootstrap_replicates: int | None = None  # all replicates drawn (the site warns above 1% dropped)
    calibration_curve: CalibrationCurve | None = None
    decision_curve: DecisionCurve | None = None
    # "as given" (a probabilistic scorer) or the recalibration {a, b, ...} fitted on the validation split
    probabilities: dict | None = None
    undefined_metrics: list[str] = []  # reported metrics with no value on these windows (e.g. PPV with no alarm)


PERCENTILE = "cluster-bootstrap-percentile"
EXPANDED = "cluster-bootstrap-expanded-percentile"


def score_metrics(predictions: pa.Table, bootstrap: BootstrapSpec, intervals: IntervalsSpec = IntervalsSpec(),
                  reporting: IohReporting | None = None, attributes: dict[str, list] | None = None) -> ScoreSummary:
    """AUROC, AUPRC and prevalence with cluster-bootstrap intervals (``intervals.prevalence`` says
    whether the prevalence interval uses all replicates or only the two-class ones); with
    ``reporting``, the clinical report too, and with ``attributes`` ({"sex": [...], "age": [...]}
    aligned with the predictions) its subgroups."""
    scores = predictions.column("score").to_numpy().astype(np.float64)
    labels = predictions.column("label").to_numpy().astype(np.int8)
    subjects = predictions.column("subjectid").to_numpy()
    cases = predictions.column("caseid").to_numpy()
    if not np.isfinite(scores).all():
        raise ValueError("scores contain NaN or infinity: every test window must be scored")
    expanded = intervals.cluster == "expanded-percentile"
    plain = EXPANDED if expanded else PERCENTILE
    alpha = level(expanded, len(np.unique(subjects)))
    boot = cluster_bootstrap(scores, labels, subjects, bootstrap.replicates, bootstrap.seed,
                             prevalence_all_replicates=intervals.prevalence == "all-replicates", alpha=alpha)
    metrics = [(m["name"], float(m["value"]), float(m["ci_low"]), float(m["ci_high"]), plain, "higher", None,
                m["replicates_kept"]) for m in boot.metrics()]
    extras = dict(
        roc=RocPoints(**roc_points(scores, labels)),
        counts=IohCounts(windows=int(len(scores)), positives=int(labels.sum()),
                         cases=int(len(np.unique(cases))), subjects=int(len(np.unique(subjects)))),
        bootstrap_dropped_replicates=int(boot.n_dropped),
        bootstrap_replicates=int(boot.n_replicates),
    )
    subgroups: dict[str, list] = {}
    if reporting is not None:
        p, recal = probabilities_of(predictions)
        ids, clusters = np.unique(subjects, return_inverse=True)
        counts = resample_cluster_counts(len(ids), bootstrap.replicates, bootstrap.seed)  # the AUROC's draws
        recalibrated, alarm_thresholds = validation_fits(predictions)
        fits = (replicate_fits(predictions, bootstrap.replicates, bootstrap.seed)
                if intervals.recalibration == "per-replicate" and recalibrated is not None else None)
        rep = clinical_report(p, labels, clusters, counts, reporting.thresholds, reporting.alarm_rates,
                              scores=scores, n_bins=reporting.calibration_bins, alpha=alpha,
                              decision_p=recalibrated, alarm_thresholds=alarm_thresholds, refit=fits)
        refit_note = REFIT if fits is not None else ""
        method = plain + RECALIBRATED + refit_note if recal is not None else plain
        for m in rep.metrics:  # the undefined ones are withheld below
            reads_recalibrated = recal is None and recalibrated is not None and _reads_decision_p(m.name)
            if reads_recalibrated:
                metrics.append(_tuple(m, plain + RECALIBRATED_LOGIT + refit_note, plain))
            else:
                alarm = fits is not None and "[alarm=" in m.name and alarm_thresholds is not None
                metrics.append(_tuple(m, method, plain + ALARM_REFIT if alarm else plain))
        extras.update(calibration_curve=CalibrationCurve(**rep.calibration_curve),
                      decision_curve=DecisionCurve(**rep.decision_curve),
                      probabilities=recal.as_dict() if recal is not None else {"as_given": True},
                      undefined_metrics=[m.name for m in rep.metrics if not _finite(m)])
        if attributes:
            groups = {}
            if "sex" in attributes:
                groups["sex"] = np.array(attributes["sex"], dtype=object)
            if "age" in attributes and reporting.age_bands:
                groups["age_band"] = np.array([age_band(a, reporting.age_bands) for a in attributes["age"]],
                                              dtype=object)
            found = subgroup_rows(p, scores, labels, clusters, ids, counts, groups, reporting.thresholds,
                                  expanded=expanded, min_clusters=intervals.min_clusters, decision_p=recalibrated,
                                  refit_fits=fits)
            logit_method = plain + RECALIBRATED_LOGIT + refit_note if recal is None and recalibrated is not None else None
            subgroups = {name: [_subgroup(g, method, plain, logit_method) for g in rows] for name, rows in found.items()}
    metrics, withheld = gate(metrics, bootstrap.replicates)
    return ScoreSummary(metrics=metrics, n=int(len(scores)), parse_rate=None, extras=IohExtras(**extras),
                        subgroups=subgroups, withheld=withheld)


RECALIBRATED_LOGIT = "; probabilities after a logistic recalibration of logit p fitted on the validation split"
# [intervals] recalibration = "per-replicate" (docs/statistics.md, "Fair calibration and thresholds from validation")
REFIT = ", refit in each bootstrap replicate on its resampled validation subjects"
ALARM_REFIT = ("; alarm threshold chosen on the validation split, re-chosen in each bootstrap replicate on its "
               "resampled validation subjects")


def _reads_decision_p(name: str) -> bool:
    """The metrics computed from the recalibrated probabilities (docs/statistics.md, "Fair calibration")."""
    return name.endswith("_recalibrated") or ("[t=" in name)


def _finite(m: MetricRow) -> bool:
    return all(math.isfinite(v) for v in (m.value, m.ci_low, m.ci_high))


def _tuple(m: MetricRow, method: str, plain: str) -> tuple:
    """The metric as ``MetricValue`` fields; ``plain`` is the method of a metric probabilities do not enter."""
    return (m.name, m.value, m.ci_low, m.ci_high, method if m.uses_probabilities else plain, m.direction, m.target,
            m.replicates_kept)


def _subgroup(g: dict, method: str, plain: str, logit_method: str | None = None) -> Subgroup:
    """A subgroup's publishable metrics: the undefined and degenerate ones are left out, as for the result.
    ``logit_method``: the method of the metrics that read a probabilistic scorer's recalibrated probabilities."""
    rows = [MetricValue(*t) for t in (_tuple(m, logit_method if logit_method and _reads_decision_p(m.name)
                                                else method, plain) for m in g["metrics"])
            if reason(t, g["replicates_kept"]) is None]
    return Subgroup(group=g["group"], n=g["n"], n_subjects=g["n_subjects"], metrics=rows, caveat=g["caveat"],
                    replicates_kept=g["replicates_kept"], withheld_reason=g["withheld_reason"])
