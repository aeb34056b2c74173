"""The recalibration map and alarm thresholds refit in every bootstrap replicate on resampled
validation subjects (docs/statistics.md, "Fair calibration and thresholds from validation"): each
replicate's map is the fit on its own resampled validation windows, and the intervals of the
metrics that read it carry the map's uncertainty (wider than the ones conditional on the map)."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.engine.specs import BootstrapSpec, IntervalsSpec
from medbench.stats.calibration import Recalibration, fit_logistic, fit_logistic_rows
from medbench.stats.decision import alarm_threshold
from medbench.stats.refit import refit, validation_counts
from pipelines.tasks.vitaldb_ioh.family import probabilities
from pipelines.tasks.vitaldb_ioh.reporting import replicate_fits, validation_windows
from pipelines.tasks.vitaldb_ioh.score import ALARM_REFIT, REFIT, score_metrics
from pipelines.tasks.vitaldb_ioh.settings import IohReporting

BOOT = BootstrapSpec(replicates=400, seed=7, unit="subject")
REPORTING = IohReporting(thresholds=[0.2], alarm_rates=[0.1], age_bands=[18, 65], calibration_bins=5)
RECALIBRATED = ("brier_recalibrated", "calibration_intercept_recalibrated", "sensitivity[t=0.2]",
                "specificity[t=0.2]", "net_benefit[t=0.2]")


def _windows(rng, n_subjects: int, per: int, first_id: int):
    """A probabilistic model, overconfident and learnt at a lower prevalence, with a subject effect."""
    subjects = np.repeat(np.arange(first_id, first_id + n_subjects), per)
    x = rng.normal(size=len(subjects)) + np.repeat(rng.normal(0, 0.8, n_subjects), per)
    y = (rng.random(len(x)) < 1 / (1 + np.exp(-(-1.5 + x)))).astype(np.int8)
    return subjects, 1 / (1 + np.exp(-(-2.5 + 2.2 * x))), y


def _predictions(probabilistic: bool = True, val_subjects: int = 6, seed: int = 3):
    """A fixed test set of 60 subjects and a small, noisy validation set scored by the same model."""
    rng = np.random.default_rng(seed)
    v_subj, v_p, v_y = _windows(rng, val_subjects, 40, 5000)
    t_subj, t_p, t_y = _windows(rng, 60, 40, 1000)
    v_s, t_s = (v_p, t_p) if probabilistic else (np.log(v_p / (1 - v_p)) * 7 - 80, np.log(t_p / (1 - t_p)) * 7 - 80)
    metadata, _ = probabilities("vitaldb-ioh@0|m", v_y, REPORTING.alarm_rates, v_subj)(v_s, probabilistic,
                                                                                     lambda _: None)
    table = pa.table({"instance_id": [f"w{i}" for i in range(len(t_s))], "score": t_s, "label": t_y,
                      "subjectid": t_subj, "caseid": t_subj}).replace_schema_metadata(metadata)
    sink = io.BytesIO()  # through a Parquet file, as the metrics step reads it
    pq.write_table(table, sink)
    sink.seek(0)
    ages = np.where((t_subj // 1) % 3 == 0, 70.0, 40.0)
    return pq.read_table(sink), (v_s, v_y, v_subj), {"sex": np.where(t_subj % 2, "F", "M").tolist(),
                                                     "age": ages.tolist()}


def test_each_replicate_refits_on_its_resampled_validation_subjects():
    table, (v_s, v_y, v_subj), _ = _predictions(probabilistic=False)
    stored = validation_windows(table)
    assert np.array_equal(stored.column("score").to_numpy(), v_s)
    assert np.array_equal(stored.column("subjectid").to_numpy(), v_subj)
    fits = replicate_fits(table, 25, BOOT.seed)
    ids, clusters = np.unique(v_subj, return_inverse=True)
    counts = validation_counts(len(ids), 25, BOOT.seed)
    assert np.array_equal(counts, validation_counts(len(ids), 25, BOOT.seed)) and (counts.sum(axis=1) == len(ids)).all()
    for r in range(25):  # the replicate's map: the fit on the windows of the subjects it drew, each as often
        take = np.repeat(np.arange(len(v_s)), counts[r][clusters])
        if v_y[take].min() == v_y[take].max():
            assert np.isnan(fits.ab[r]).all()
            continue
        own = Recalibration.fit(v_s[take], v_y[take])
        assert np.allclose(fits.ab[r], [own.a, own.b], rtol=1e-6, atol=1e-8)
        assert fits.thresholds[0.1][r] == alarm_threshold(v_s[take], 0.1)
    assert len({tuple(np.round(ab, 6)) for ab in fits.ab[fits.defined]}) > 10  # replicates differ
    # with every subject once, the refit is the map fitted when the model ran
    one = refit(v_s, v_y, v_s, clusters, np.ones((1, len(ids)), np.int32), v_s, v_s, alarm_rates=[0.1])
    full = Recalibration.fit(v_s, v_y)
    assert np.allclose(one.ab[0], [full.a, full.b], rtol=1e-8) and one.thresholds[0.1][0] == alarm_threshold(v_s, 0.1)


def test_per_row_fits_equal_one_fit_per_row():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 300)) * rng.uniform(0.5, 3, size=(5, 1))
    y = (rng.random(300) < 0.3).astype(np.float64)
    w = rng.integers(0, 3, size=(5, 300)).astype(np.float64)
    both, offset = fit_logistic_rows(x, y, w), fit_logistic_rows(x, y, w, offset=True)
    for r in range(5):
        assert np.allclose(both[r], fit_logistic(x[r], y, w[r:r + 1])[0], rtol=1e-7, atol=1e-9)
        assert np.allclose(offset[r], fit_logistic(x[r], y, w[r:r + 1], offset=True)[0], rtol=1e-7, atol=1e-9)


def _rows(table, attributes, recalibration: str):
    summary = score_metrics(table, BOOT, IntervalsSpec(cluster="expanded-percentile", recalibration=recalibration),
                            REPORTING, attributes)
    return {m[0]: m for m in summary.metrics}, summary


def test_the_intervals_of_recalibrated_metrics_carry_the_maps_uncertainty():
    table, _, attributes = _predictions()
    fixed, _ = _rows(table, attributes, "fixed")
    refit_rows, summary = _rows(table, attributes, "per-replicate")
    for name in RECALIBRATED:
        assert refit_rows[name][1] == fixed[name][1]  # the point estimate: the map on all validation windows
        width, conditional = refit_rows[name][3] - refit_rows[name][2], fixed[name][3] - fixed[name][2]
        # the map moves the threshold metrics and the intercept most; Brier and net benefit barely
        wider = 1.5 if name in ("calibration_intercept_recalibrated", "sensitivity[t=0.2]", "specificity[t=0.2]") \
            else 0.95
        assert width > wider * conditional, (name, width, conditional)
        assert refit_rows[name][4].endswith(REFIT) and not fixed[name][4].endswith(REFIT)
    for name in ("auroc", "brier", "calibration_slope"):  # a trained model's own probabilities: no map enters
        assert refit_rows[name][1:4] == fixed[name][1:4] and REFIT not in refit_rows[name][4]
    alarm = refit_rows["sensitivity[alarm=0.1]"]
    assert alarm[4].endswith(ALARM_REFIT) and alarm[1] == fixed["sensitivity[alarm=0.1]"][1]
    assert refit_rows["alarm_rate[alarm=0.1]"][3] - refit_rows["alarm_rate[alarm=0.1]"][2] > \
        fixed["alarm_rate[alarm=0.1]"][3] - fixed["alarm_rate[alarm=0.1]"][2]
    for groups in summary.subgroups.values():  # subgroups read the same refit maps, one replicate subset each
        for g in groups:
            for m in g.metrics:
                assert m.replicates_kept <= g.replicates_kept
                if m.name in RECALIBRATED:
                    assert m.method.endswith(REFIT)


def test_a_rules_probabilities_are_the_map_so_its_brier_carries_the_refit_too():
    table, _, attributes = _predictions(probabilistic=False)
    fixed, _ = _rows(table, attributes, "fixed")
    refit_rows, _ = _rows(table, attributes, "per-replicate")
    for name in ("brier", "calibration_intercept", "brier_recalibrated"):
        assert refit_rows[name][1] == fixed[name][1]
        assert refit_rows[name][3] - refit_rows[name][2] > fixed[name][3] - fixed[name][2]
        assert refit_rows[name][4].endswith(REFIT)
    assert refit_rows["auroc"][1:4] == fixed["auroc"][1:4]


def test_predictions_without_validation_windows_keep_the_conditional_method():
    table, _, attributes = _predictions()
    meta = {k: v for k, v in table.schema.metadata.items() if k != b"medbench.validation"}
    rows, _ = _rows(table.replace_schema_metadata(meta), attributes, "per-replicate")
    fixed, _ = _rows(table, attributes, "fixed")
    assert rows["brier_recalibrated"][1:5] == fixed["brier_recalibrated"][1:5]
