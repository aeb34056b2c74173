"""The validity gate (docs/statistics.md, "Withheld metrics"): an undefined or degenerate metric is
left out of ``metrics`` and listed in ``withheld`` with its reason; the primary cannot be withheld."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from pipelines.engine.specs import BootstrapSpec, IntervalsSpec
from medbench.stats.validity import gate, reason
from pipelines.tasks.vitaldb_ioh.reporting import probability_metadata
from pipelines.tasks.vitaldb_ioh.score import score_metrics
from pipelines.tasks.vitaldb_ioh.settings import IohReporting

BOOT = BootstrapSpec(replicates=300, seed=3, unit="subject")


def test_each_reason():
    m = "cluster-bootstrap-expanded-percentile"
    assert reason(("auroc", 0.8, 0.7, 0.9, m, "higher", None, 300), 300) is None
    assert "undefined" in reason(("ppv", math.nan, math.nan, math.nan, m), 300)
    assert "no interval" in reason(("npv", 0.9, math.nan, math.nan, m), 300)
    assert "collapses" in reason(("sensitivity[t=0.9]", 0.0, 0.0, 0.0, m), 300)
    assert "only 100 of 300" in reason(("ppv", 0.5, 0.2, 0.8, m, "higher", None, 100), 300)
    # a Wilson interval is never zero-width, and 1045/1045 with its Wilson interval is published
    assert reason(("parse_rate", 1.0, 0.9963, 1.0, "wilson"), 1000) is None


def test_a_withheld_primary_is_an_error_not_a_missing_number():
    with pytest.raises(ValueError, match="primary metric is not publishable"):
        gate([("auroc", math.nan, math.nan, math.nan, "cluster-bootstrap-percentile")], 100)


def test_degenerate_operating_points_are_withheld_from_an_ioh_result():
    rng = np.random.default_rng(4)
    subjects = np.repeat(np.arange(20), 25)
    labels = (rng.random(len(subjects)) < 0.2).astype(np.int8)
    p = np.clip(0.15 + 0.1 * labels + rng.normal(0, 0.03, len(subjects)), 0.01, 0.6)  # never reaches 0.9
    table = pa.table({"instance_id": [f"w{i}" for i in range(len(p))], "score": p, "label": labels,
                      "subjectid": subjects, "caseid": subjects}).replace_schema_metadata(probability_metadata(True, None))
    reporting = IohReporting(thresholds=[0.2, 0.9], alarm_rates=[], age_bands=[], calibration_bins=5)
    summary = score_metrics(table, BOOT, IntervalsSpec(cluster="expanded-percentile"), reporting)
    published = {m[0] for m in summary.metrics}
    withheld = dict(summary.withheld)
    # at t = 0.9 nothing alarms: sensitivity is 0 in every replicate (a collapsed interval), PPV undefined
    assert "sensitivity[t=0.9]" in withheld and "collapses" in withheld["sensitivity[t=0.9]"]
    assert "ppv[t=0.9]" in withheld and "undefined" in withheld["ppv[t=0.9]"]
    assert not published & set(withheld)
    assert "auroc" in published and "sensitivity[t=0.2]" in published
    for m in summary.metrics:
        assert all(math.isfinite(v) for v in m[1:4]) and m[2] < m[3] or "bootstrap" not in (m[4] or "")
