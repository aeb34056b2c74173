"""``accuracy_upper`` (docs/statistics.md, "Parse bounds"): the accuracy had every unparsed reply
been right, with its interval; the site shows it beside accuracy when the parse rate is below 1."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import msgspec
import pyarrow as pa
from litestar.testing import TestClient
from support.api_data import catalog

from api.app import create_app
from pipelines.engine.specs import BootstrapSpec, IntervalsSpec
from medbench.stats.wilson import wilson_interval
from pipelines.tasks.clinicalqa.score import summarise_choice
from medbench.layout import DataDir
from warehouse.publish import publish
from medbench.records import MetricValue

BOOT = BootstrapSpec(replicates=200, seed=1, unit="item")


def test_accuracy_upper_counts_every_unparsed_reply_as_right():
    # 10 items: 4 right, 3 wrong but parsed, 3 unparsed (never right)
    correct = [True] * 4 + [False] * 6
    status = ["ok"] * 7 + ["no_answer"] * 3
    table = pa.table({"instance_id": [f"i{k}" for k in range(10)], "correct": correct, "parse_status": status,
                      "raw_output": ["x"] * 10})
    scored = summarise_choice(table, ["a"] * 10, BOOT, IntervalsSpec(proportion="wilson"))
    rows = {m.name: m for m in scored.metrics}
    upper = rows["accuracy_upper"]
    assert (rows["accuracy"].value, rows["parse_rate"].value, upper.value) == (0.4, 0.7, 0.7)
    assert (upper.ci_low, upper.ci_high) == wilson_interval(7, 10) and upper.method == "wilson"
    assert [m.name for m in scored.metrics[:3]] == ["accuracy", "parse_rate", "accuracy_upper"]


def test_the_board_shows_accuracy_upper_beside_accuracy_when_replies_went_unparsed(tmp_path: Path):
    data = DataDir(tmp_path / "data")
    cat = catalog(data)
    results = []
    for r in cat.results:
        if r.parse_rate is not None and r.parse_rate < 1:
            acc = r.metrics[0]
            r = msgspec.structs.replace(r, metrics=[*r.metrics, MetricValue("accuracy_upper", acc.value + 0.1,
                                                                             acc.ci_low + 0.1, acc.ci_high + 0.1)])
        results.append(r)
    publish(data, dataclasses.replace(cat, results=results))
    by_id = {r.run_id: r for r in results}
    with TestClient(create_app(data.root)) as client:
        task = next(r.task for r in results if r.metric("accuracy_upper") is not None)
        rows = client.get(f"/v1/leaderboard?task={task}").json()["rows"]
        shown = [by_id[row["run_id"]] for row in rows if row["parse_rate"] is not None and row["parse_rate"] < 1]
        assert shown
        slug, version = task.split("@")
        page = client.get(f"/tasks/{slug}?version={version}").text
        assert page.count("if all unparsed were right") == len(shown)
        for r in shown:
            assert f"≤ {r.metric('accuracy_upper').value:.3f}" in page
        result_page = client.get(f"/r/{shown[0].run_id}").text
        assert 'id="accuracy-upper"' in result_page
