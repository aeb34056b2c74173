"""A vitaldb-ioh result in /v1/results lists the clinical report (Brier, calibration intercept and
slope, sensitivity and specificity at the spec's thresholds, net benefit, each metric's direction)
and its subgroups with the small-subgroup caveat; its page draws the calibration and decision
curves; the task lists its participant flow, on /v1/tasks/{slug} and on its page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient
from support.api_data import RUN_IDS
from support.ioh_data import BASELINE, FLOW, OTHER, publish_ioh
from support.plugins import specs as load_specs

from api.app import create_app

TASK = load_specs().task("vitaldb-ioh@0")
REPORTING = TASK.ioh.reporting


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Iterator[TestClient]:
    root: Path = publish_ioh(tmp_path_factory.mktemp("ioh-clinical") / "data").root
    with TestClient(create_app(root)) as c:
        yield c


def test_the_result_lists_the_clinical_metrics_with_directions(client: TestClient) -> None:
    body = client.get(f"/v1/results/{RUN_IDS[OTHER]}").json()
    metrics = {m["name"]: m for m in body["metrics"]}
    wanted = ["brier", "calibration_intercept", "calibration_slope"]
    for t in REPORTING.thresholds:
        wanted += [f"sensitivity[t={t:g}]", f"specificity[t={t:g}]", f"net_benefit[t={t:g}]"]
    assert set(wanted) <= set(metrics), sorted(set(wanted) - set(metrics))
    assert (metrics["brier"]["direction"], metrics["brier"]["target"]) == ("lower", None)
    assert (metrics["calibration_slope"]["direction"], metrics["calibration_slope"]["target"]) == ("target", 1.0)
    assert (metrics["calibration_intercept"]["direction"], metrics["calibration_intercept"]["target"]) == ("target", 0.0)
    assert metrics["auroc"]["direction"] == "higher"
    # the synthetic scores are not probabilities: the metrics that read probabilities say how they were made
    assert "logistic recalibration fitted on the validation split" in metrics["brier"]["method"]
    assert "recalibration" not in metrics["auroc"]["method"]
    for m in metrics.values():
        assert m["ci_low"] <= m["value"] <= m["ci_high"], m


def test_subgroups_below_the_minimum_of_subjects_publish_counts_only(client: TestClient) -> None:
    """12 test subjects: every subgroup is below vitaldb-ioh@0's ``min_clusters = 15``."""
    subgroups = client.get(f"/v1/results/{RUN_IDS[BASELINE]}").json()["subgroups"]
    assert [g["group"] for g in subgroups["sex"]] == ["F", "M"]
    assert [g["group"] for g in subgroups["age_band"]] == ["18-39", "40-64", "65+"]
    for rows in subgroups.values():
        assert sum(g["n"] for g in rows) == 96
        for g in rows:
            assert g["n_subjects"] < 15 and g["metrics"] == [] and g["replicates_kept"] == 0
            assert "fewer than the 15" in g["withheld_reason"]
    page = client.get(f"/r/{RUN_IDS[BASELINE]}").text
    assert page.count('class="muted subgroup-withheld"') == 5


def test_the_page_draws_the_calibration_and_decision_curves(client: TestClient) -> None:
    page = client.get(f"/r/{RUN_IDS[OTHER]}").text
    for pid, css in (("calibration-curve", "figure calibration-curve"), ("decision-curve", "figure decision-curve")):
        figure = re.search(rf'<figure class="picture" id="{pid}">(.*?)</figure>', page, re.S)
        assert figure is not None, f"no {pid} on the result page"
        assert f'<svg class="{css}"' in figure.group(1) and "<polyline" in figure.group(1)
    decision = re.search(r'<figure class="picture" id="decision-curve">(.*?)</figure>', page, re.S).group(1)
    assert {"model", "treat all", "treat none"} <= set(re.findall(r'data-series="([^"]+)"', decision))


def test_the_task_lists_its_participant_flow(client: TestClient) -> None:
    body = client.get("/v1/tasks/vitaldb-ioh").json()
    assert body["participant_flow"] == FLOW
    page = client.get("/tasks/vitaldb-ioh").text
    assert 'id="participant-flow"' in page and "cases in the snapshot: 80 cases" in page
    assert "excluded: age below 18 or missing: 3 cases" in page
    assert client.get("/v1/tasks/clinicalqa").json()["participant_flow"] is None
