"""vitaldb-ioh's intervals when many bootstrap replicates hold one class only: the prevalence interval
is taken over every replicate (prevalence is defined there), AUROC/AUPRC over the two-class ones, and
the number left out is reported in the result's extras (the result page warns above 1%)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from pipelines.engine.specs import BootstrapSpec, IntervalsSpec
from support.plugins import specs as load_specs
from medbench.stats.auroc import cluster_bootstrap, resample_cluster_draws
from pipelines.tasks.vitaldb_ioh.score import score_metrics

REPLICATES, SEED = 300, 11
BOOT = BootstrapSpec(replicates=REPLICATES, seed=SEED, unit="subject")


def lopsided(n_subjects: int = 8, per_subject: int = 5, seed: int = 0):
    """Windows of ``n_subjects`` subjects whose positives all sit in subject 0 (2 of its windows):
    a replicate that misses subject 0 has no positive, about (1 - 1/C)^C of them."""
    rng = np.random.default_rng(seed)
    subjects = np.repeat(np.arange(100, 100 + n_subjects), per_subject)
    labels = np.zeros(len(subjects), dtype=np.int8)
    labels[[0, 2]] = 1
    scores = rng.normal(size=len(subjects)) + 1.5 * labels
    return scores, labels, subjects


def brute_force(scores, labels, subjects, replicates: int, seed: int):
    """Per replicate, from the documented draw: its windows, then sklearn/numpy on them."""
    ids = np.unique(subjects)
    prevalence, aurocs, auprcs = [], [], []
    for row in resample_cluster_draws(len(ids), replicates, seed):
        take = np.concatenate([np.flatnonzero(subjects == ids[k]) for k in row])
        y, s = labels[take], scores[take]
        prevalence.append(y.mean())
        if 0 < y.sum() < len(y):
            aurocs.append(roc_auc_score(y, s))
            auprcs.append(average_precision_score(y, s))
    return np.array(prevalence), np.array(aurocs), np.array(auprcs)


def test_prevalence_over_all_replicates_auroc_over_two_class_ones():
    s, y, subjects = lopsided()
    prevalence, aurocs, auprcs = brute_force(s, y, subjects, REPLICATES, SEED)
    dropped = REPLICATES - len(aurocs)
    assert dropped > 0.2 * REPLICATES  # many one-class replicates, all with prevalence 0
    assert (prevalence == 0).sum() == dropped
    got = cluster_bootstrap(s, y, subjects, REPLICATES, SEED, prevalence_all_replicates=True)
    assert got.n_replicates == REPLICATES and got.n_dropped == dropped
    assert (got.prevalence_ci_low, got.prevalence_ci_high) == pytest.approx(
        tuple(np.percentile(prevalence, [2.5, 97.5])), abs=1e-12)
    assert got.prevalence_ci_low == 0.0  # the one-class replicates are in the interval
    assert (got.ci_low, got.ci_high) == pytest.approx(tuple(np.percentile(aurocs, [2.5, 97.5])), abs=1e-12)
    assert (got.auprc_ci_low, got.auprc_ci_high) == pytest.approx(
        tuple(np.percentile(auprcs, [2.5, 97.5])), abs=1e-9)


def test_the_old_method_takes_prevalence_over_two_class_replicates_only():
    s, y, subjects = lopsided()
    prevalence, _, _ = brute_force(s, y, subjects, REPLICATES, SEED)
    old = cluster_bootstrap(s, y, subjects, REPLICATES, SEED)  # the default: results published before
    two_class = prevalence[prevalence > 0]
    assert (old.prevalence_ci_low, old.prevalence_ci_high) == pytest.approx(
        tuple(np.percentile(two_class, [2.5, 97.5])), abs=1e-12)
    assert old.prevalence_ci_low > 0


def _predictions(scores, labels, subjects) -> pa.Table:
    return pa.table({
        "instance_id": pa.array([f"{c}:{i}" for i, c in enumerate(subjects)], pa.string()),
        "score": pa.array(scores, pa.float64()), "label": pa.array(labels, pa.int8()),
        "caseid": pa.array(subjects, pa.int32()), "subjectid": pa.array(subjects, pa.int32()),
        "t": pa.array(np.arange(len(scores)), pa.int32()),
    })


def test_the_task_scores_with_all_replicates_and_reports_the_dropped_count():
    task = load_specs().task("vitaldb-ioh@0")
    assert task.intervals.prevalence == "all-replicates"
    # seed 1: AUROC 0.947 (seed 0 separates perfectly, an AUROC of 1 in every replicate, which the
    # validity gate refuses to publish); plain percentile levels, to compare with numpy's
    s, y, subjects = lopsided(seed=1)
    prevalence, aurocs, _ = brute_force(s, y, subjects, REPLICATES, SEED)
    summary = score_metrics(_predictions(s, y, subjects), BOOT,
                            IntervalsSpec(prevalence=task.intervals.prevalence))
    rows = {m[0]: m for m in summary.metrics}
    assert rows["prevalence"][2:4] == pytest.approx(tuple(np.percentile(prevalence, [2.5, 97.5])), abs=1e-12)
    assert rows["auroc"][2:4] == pytest.approx(tuple(np.percentile(aurocs, [2.5, 97.5])), abs=1e-12)
    extras = summary.extras_json()
    assert extras["bootstrap_dropped_replicates"] == REPLICATES - len(aurocs)
    assert extras["bootstrap_replicates"] == REPLICATES
    old = score_metrics(_predictions(s, y, subjects), BOOT,
                        IntervalsSpec())
    assert {m[0]: m for m in old.metrics}["prevalence"][2] > 0  # the default keeps the old method
