"""Intervals with few subjects (docs/statistics.md, "Intervals with few subjects"): the expanded
percentile level, a subgroup below the minimum of clusters published as counts only, and
``replicates_kept`` on every metric and subgroup, a subgroup's intervals all from one subset."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
from scipy import stats

from bench.coverage import main as coverage_main
from pipelines.engine.specs import BootstrapSpec, IntervalsSpec
from medbench.stats.intervals import expanded_alpha, percentile_interval
from pipelines.tasks.vitaldb_ioh.reporting import probability_metadata
from pipelines.tasks.vitaldb_ioh.score import EXPANDED, score_metrics
from pipelines.tasks.vitaldb_ioh.settings import IohReporting

BOOT = BootstrapSpec(replicates=400, seed=5, unit="subject")
REPORTING = IohReporting(thresholds=[0.2], alarm_rates=[], age_bands=[18, 40, 65], calibration_bins=5)


def test_expanded_level_is_hesterbergs_and_tends_to_the_plain_one():
    for c in (15, 17, 60):
        want = 2 * stats.norm.cdf(-math.sqrt(c / (c - 1)) * stats.t.ppf(0.975, c - 1))
        assert math.isclose(expanded_alpha(c), want, rel_tol=1e-9)
    assert expanded_alpha(15) < expanded_alpha(60) < expanded_alpha(10_000) < 0.05
    assert math.isclose(expanded_alpha(100_000), 0.05, abs_tol=1e-4)
    v = np.random.default_rng(1).normal(size=2_000)
    low, high = percentile_interval(v, expanded_alpha(15))
    plain = percentile_interval(v)
    assert low < plain[0] and high > plain[1]  # wider


def _table(n_subjects: int = 24, per: int = 30, seed: int = 2):
    rng = np.random.default_rng(seed)
    subjects = np.repeat(np.arange(1000, 1000 + n_subjects), per)
    u = np.repeat(rng.normal(size=n_subjects), per)
    labels = (rng.random(len(subjects)) < 1 / (1 + np.exp(-(-1.5 + u)))).astype(np.int8)
    scores = 1 / (1 + np.exp(-(-1.5 + u + rng.normal(size=len(subjects)))))
    table = pa.table({"instance_id": [f"w{i}" for i in range(len(subjects))], "score": scores, "label": labels,
                      "subjectid": subjects, "caseid": subjects}).replace_schema_metadata(
        probability_metadata(True, None))
    # 20 subjects of 18-39, 4 of 65+: the 65+ subgroup is below a minimum of 15
    ages = np.repeat(np.where(np.arange(n_subjects) < 20, 30.0, 70.0), per)
    sexes = np.repeat(np.where(np.arange(n_subjects) % 2 == 0, "F", "M"), per)
    return table, {"age": ages.tolist(), "sex": sexes.tolist()}


def test_a_subgroup_below_the_minimum_publishes_counts_only_and_every_metric_its_replicates():
    table, attributes = _table()
    summary = score_metrics(table, BOOT, IntervalsSpec(cluster="expanded-percentile", min_clusters=15),
                            REPORTING, attributes)
    by_band = {g.group: g for g in summary.subgroups["age_band"]}
    old = by_band["65+"]
    assert old.metrics == [] and old.n_subjects == 4 and old.n == 120 and old.replicates_kept == 0  # 0: no interval, no replicates
    assert "fewer than the 15" in old.withheld_reason
    young = by_band["18-39"]
    assert young.withheld_reason is None and young.metrics and 0 < young.replicates_kept <= BOOT.replicates
    for m in young.metrics:  # one subset of replicates for every interval of the subgroup
        assert m.method.startswith(EXPANDED)
        assert m.replicates_kept is not None and m.replicates_kept <= young.replicates_kept
    auroc = next(m for m in young.metrics if m.name == "auroc")
    assert auroc.replicates_kept == young.replicates_kept
    for row in summary.metrics:
        assert row[4].startswith(EXPANDED) and isinstance(row[7], int) and 0 < row[7] <= BOOT.replicates


def test_the_expanded_interval_is_wider_than_the_percentile_one_of_the_same_replicates():
    table, attributes = _table()
    plain = {m[0]: m for m in score_metrics(table, BOOT, IntervalsSpec(), REPORTING, attributes).metrics}
    wide = {m[0]: m for m in score_metrics(table, BOOT, IntervalsSpec(cluster="expanded-percentile"),
                                           REPORTING, attributes).metrics}
    for name in ("auroc", "brier", "sensitivity[t=0.2]"):
        assert wide[name][2] <= plain[name][2] and wide[name][3] >= plain[name][3]
        assert (wide[name][2], wide[name][3]) != (plain[name][2], plain[name][3])


def test_coverage_bench_quick_meets_the_target(capsys):
    assert coverage_main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "C=15" in out and "expanded" in out and "chosen: met" in out
