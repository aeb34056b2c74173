"""Metrics of a score task (vitaldb-ioh) from its predictions: AUROC with a cluster-bootstrap 95% CI
over test subjects (replicates with one class are left out and counted), AUPRC and prevalence,
plus the counts and ROC points the site draws (the typed ``IohExtras``)."""

from __future__ import annotations

import msgspec
import numpy as np
import pyarrow as pa

from pipelines.core.outcomes import ScoreSummary
from pipelines.core.specs import BootstrapSpec, IntervalsSpec
from pipelines.stats.auroc import cluster_bootstrap, roc_points


class RocPoints(msgspec.Struct, frozen=True):
    fpr: list[float]
    tpr: list[float]


class IohCounts(msgspec.Struct, frozen=True):
    windows: int
    positives: int
    cases: int
    subjects: int


class IohExtras(msgspec.Struct, frozen=True):
    """A vitaldb-ioh result's ``extras``: the ROC curve, the test counts, dropped bootstrap replicates."""

    roc: RocPoints
    counts: IohCounts
    bootstrap_dropped_replicates: int  # one-class replicates, left out of the AUROC/AUPRC intervals
    bootstrap_replicates: int | None = None  # all replicates drawn (the site warns above 1% dropped)


METHOD = "cluster-bootstrap-percentile"


def score_metrics(predictions: pa.Table, bootstrap: BootstrapSpec, intervals: IntervalsSpec = IntervalsSpec()) -> ScoreSummary:
    """AUROC, AUPRC and prevalence with cluster-bootstrap intervals (``intervals.prevalence`` says
    whether the prevalence interval uses all replicates or only the two-class ones)."""
    scores = predictions.column("score").to_numpy().astype(np.float64)
    labels = predictions.column("label").to_numpy().astype(np.int8)
    subjects = predictions.column("subjectid").to_numpy()
    cases = predictions.column("caseid").to_numpy()
    if not np.isfinite(scores).all():
        raise ValueError("scores contain NaN or infinity: every test window must be scored")
    boot = cluster_bootstrap(scores, labels, subjects, bootstrap.replicates, bootstrap.seed,
                             prevalence_all_replicates=intervals.prevalence == "all-replicates")
    extras = IohExtras(
        roc=RocPoints(**roc_points(scores, labels)),
        counts=IohCounts(windows=int(len(scores)), positives=int(labels.sum()),
                         cases=int(len(np.unique(cases))), subjects=int(len(np.unique(subjects)))),
        bootstrap_dropped_replicates=int(boot.n_dropped),
        bootstrap_replicates=int(boot.n_replicates),
    )
    metrics = [(m["name"], float(m["value"]), float(m["ci_low"]), float(m["ci_high"]), METHOD)
               for m in boot.metrics()]
    return ScoreSummary(metrics=metrics, n=int(len(scores)), parse_rate=None, extras=extras)
