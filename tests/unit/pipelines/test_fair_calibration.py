"""Fair calibration and thresholds from validation (docs/statistics.md, "Fair calibration"): a trained
(probabilistic) model's calibration and Brier are published as given and after the same logistic
recalibration on validation that the rules get; threshold metrics and net benefit read the
recalibrated probabilities; alarm-rate thresholds are chosen on validation, and the alarm rate
achieved on test is published with its interval."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from pipelines.engine.specs import BootstrapSpec, IntervalsSpec
from medbench.stats.calibration import brier, calibration_slope
from medbench.stats.decision import alarm_threshold
from pipelines.tasks.vitaldb_ioh.family import probabilities
from pipelines.tasks.vitaldb_ioh.reporting import PROBABILITIES_KEY
from pipelines.tasks.vitaldb_ioh.score import score_metrics
from pipelines.tasks.vitaldb_ioh.settings import IohReporting

BOOT = BootstrapSpec(replicates=300, seed=2, unit="subject")
REPORTING = IohReporting(thresholds=[0.2], alarm_rates=[0.05, 0.1], age_bands=[], calibration_bins=5)


def _draw(rng, n_subjects: int, per: int = 40):
    """Windows whose model probabilities are overconfident and learnt at a lower prevalence
    (true logit = -1.5 + x; the model says sigmoid(-2.5 + 2.2 x))."""
    subjects = np.repeat(np.arange(n_subjects), per)
    x = rng.normal(size=len(subjects)) + np.repeat(rng.normal(0, 0.3, n_subjects), per)
    y = (rng.random(len(x)) < 1 / (1 + np.exp(-(-1.5 + x)))).astype(np.int8)
    return subjects, 1 / (1 + np.exp(-(-2.5 + 2.2 * x))), y


def test_a_trained_model_is_published_raw_and_recalibrated_with_validation_thresholds():
    rng = np.random.default_rng(11)
    _, val_p, val_y = _draw(rng, 150)
    metadata, config = probabilities("vitaldb-ioh@0|ml/x", val_y, REPORTING.alarm_rates)(val_p, True, lambda _: None)
    body = json.loads(metadata[PROBABILITIES_KEY])
    assert body["probabilistic"] and body["recalibration"] is None
    assert body["validation_recalibration"]["of"] == "logit(p)"
    assert body["alarm_thresholds"] == {"0.05": alarm_threshold(val_p, 0.05), "0.1": alarm_threshold(val_p, 0.1)}
    assert config["probabilities"]["alarm_thresholds"] == body["alarm_thresholds"]

    subjects, p, y = _draw(rng, 40)
    table = pa.table({"instance_id": [f"w{i}" for i in range(len(p))], "score": p, "label": y,
                      "subjectid": subjects, "caseid": subjects}).replace_schema_metadata(metadata)
    summary = score_metrics(table, BOOT, IntervalsSpec(cluster="expanded-percentile"), REPORTING)
    rows = {m[0]: m for m in summary.metrics}
    # as published: the model's own probabilities
    assert rows["brier"][1] == brier(p, y) and rows["calibration_slope"][1] == calibration_slope(p, y)[0]
    assert rows["calibration_slope"][1] < 0.6  # overconfident
    # after the validation recalibration: close to calibrated, and better by Brier
    assert 0.75 < rows["calibration_slope_recalibrated"][1] < 1.25
    assert rows["brier_recalibrated"][1] < rows["brier"][1]
    assert "recalibration of logit p" in rows["brier_recalibrated"][4]
    assert "recalibration" not in rows["brier"][4]
    assert "recalibration of logit p" in rows["sensitivity[t=0.2]"][4]  # threshold metrics read them
    assert "recalibration of logit p" in rows["net_benefit[t=0.2]"][4]
    # thresholds from validation, applied to test; the achieved alarm rate with its interval
    for r in (0.05, 0.1):
        t = body["alarm_thresholds"][f"{r:g}"]
        achieved = rows[f"alarm_rate[alarm={r:g}]"]
        assert achieved[1] == np.mean(p >= t) and achieved[2] <= achieved[1] <= achieved[3]
        assert achieved[5] == "target" and achieved[6] == r
        assert rows[f"sensitivity[alarm={r:g}]"][1] == np.mean(p[y == 1] >= t)


def test_without_validation_scores_a_probabilistic_scorer_keeps_the_old_method():
    """A package result with no validation scores (made before packages scored the validation
    windows, ``pipelines.official.evaluate``): no validation map and no validation thresholds, so
    it keeps the method of results before."""
    metadata, config = probabilities("vitaldb-ioh@0|org/pkg", np.zeros(0, np.int8), (0.05,))(np.zeros(0), True,
                                                                                              lambda _: None)
    body = json.loads(metadata[PROBABILITIES_KEY])
    assert body == {"probabilistic": True, "recalibration": None}
    assert config["probabilities"] == {"probabilistic": True, "recalibration": None}
