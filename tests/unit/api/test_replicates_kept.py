"""``replicates_kept`` is an int on every published metric and subgroup (docs/statistics.md,
"Intervals with few subjects"): the replicates behind a bootstrap interval, 0 for an analytic one
(Wilson: no replicates), never null."""

from __future__ import annotations

from types import SimpleNamespace

import msgspec

from api import render
from api.metric_schemas import Metric, Subgroup
from pipelines.engine.evaluate import _counted
from pipelines.engine.specs import BootstrapSpec
from medbench.records import MetricValue, ResultRecord, replicates_published
from medbench.records import Subgroup as SubgroupRecord


def _record(metrics, config=None, subgroups=None) -> ResultRecord:
    fields = {f.name: None for f in msgspec.structs.fields(ResultRecord) if f.required}
    fields.update(metrics=metrics, config=config if config is not None else {}, subgroups=subgroups or {})
    return ResultRecord(**fields)


def test_an_analytic_interval_publishes_0_and_a_bootstrap_its_replicates():
    wilson = MetricValue("parse_rate", 1.0, 0.996, 1.0, "wilson")
    counted = MetricValue("auroc", 0.8, 0.7, 0.9, "cluster-bootstrap-expanded-percentile", replicates_kept=987)
    uncounted = MetricValue("accuracy", 0.7, 0.6, 0.8, "bootstrap-percentile")  # a mean: every replicate defines it
    r = _record([wilson, counted, uncounted], config={"bootstrap": {"replicates": 1000, "seed": 1}},
                subgroups={"age_band": [SubgroupRecord(group="65+", n=12, n_subjects=2, metrics=[],
                                                       withheld_reason="too few")]})
    published = [msgspec.json.decode(msgspec.json.encode(render.metric(m, r))) for m in r.metrics]
    assert [m["replicates_kept"] for m in published] == [0, 987, 1000]
    assert all(type(m["replicates_kept"]) is int for m in published)
    group, = render.subgroups(r)["age_band"]
    assert group.replicates_kept == 0
    assert next(f for f in msgspec.structs.fields(Metric) if f.name == "replicates_kept").type is int
    assert next(f for f in msgspec.structs.fields(Subgroup) if f.name == "replicates_kept").type is int


def test_scoring_writes_the_count_into_the_record():
    ev = SimpleNamespace(task=SimpleNamespace(bootstrap=BootstrapSpec(replicates=500, seed=3, unit="item")))
    assert _counted(MetricValue("accuracy", 0.7, 0.6, 0.8, "wilson"), ev).replicates_kept == 0
    assert _counted(MetricValue("accuracy", 0.7, 0.6, 0.8, "bootstrap-percentile"), ev).replicates_kept == 500
    assert _counted(MetricValue("auroc", 0.8, 0.7, 0.9, "cluster-bootstrap-percentile", replicates_kept=480),
                    ev).replicates_kept == 480
    assert replicates_published(None, None, None) == 0



def test_a_result_signed_with_a_null_count_still_verifies_when_served_as_an_int():
    """Results signed before ``replicates_kept`` was always an int carry null in their signed string;
    served as 0 (or the bootstrap's replicates) they still verify, and any other change does not."""
    from warehouse.signing import result_mismatches

    signed = msgspec.json.encode({"signed_at": "2026-12-01T00:00:00Z", "key_id": "k", "metrics": [{"name": "parse_rate", "value": 1.0, "replicates_kept": None}],
                                  "subgroups": {"sex": [{"group": "F", "n": 4, "replicates_kept": None,
                                                         "metrics": []}]}}).decode()
    served = {"metrics": [{"name": "parse_rate", "value": 1.0, "replicates_kept": 0}],
              "subgroups": {"sex": [{"group": "F", "n": 4, "replicates_kept": 0, "metrics": []}]}}
    assert result_mismatches(signed, served) == []
    changed = {**served, "metrics": [{"name": "parse_rate", "value": 0.9, "replicates_kept": 0}]}
    assert result_mismatches(signed, changed) == ["metrics"]
    counted = signed.replace("null", "7", 1)  # a count that was signed must be served as signed
    assert result_mismatches(counted, served) == ["metrics"]
