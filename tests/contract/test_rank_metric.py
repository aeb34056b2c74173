"""``/v1/leaderboard?metric=``: any published metric, in its direction, with rank sets recomputed at
publish for that order (or point ranks that say so), and ``invalid_parameter`` for an unknown one."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from litestar.testing import TestClient
from support.api_data import RUN_IDS, catalog, distinct_choice_predictions

from api.app import create_app
from pipelines.engine.ranking import rank_rows
from medbench.stats.ranks import accuracy_rank_intervals
from medbench.layout import DataDir
from warehouse.publish import publish
from warehouse.read import read_ranks
from medbench.records import MetricValue

NOW = dt.datetime(2026, 10, 29, 12, tzinfo=dt.UTC)
# current clinicalqa@0 results -> (brier: lower is better, calibration slope: target 1, parse-rate chance)
EXTRA = {"gptoss-cqa0": (0.30, 0.50, 0.95), "medgemma-cqa0": (0.10, 1.20, 0.55), "random-cqa0": (0.20, 1.05, 0.75),
         "medgemma-cqa0-old": (0.25, 0.9, 0.8)}


def _published(tmp_path: Path) -> DataDir:
    data = DataDir(tmp_path / "data")
    cat = catalog(data)
    distinct_choice_predictions(data, cat.results)
    rng = np.random.default_rng(3)
    label_of = {v: k for k, v in RUN_IDS.items()}
    results = []
    for r in cat.results:
        extra = EXTRA.get(label_of[r.run_id])
        if extra is not None:
            brier, slope, parsed = extra
            path = data.predictions_path(r.run_id)
            t = pq.read_table(path)
            status = np.where(rng.random(t.num_rows) < parsed, "ok", "no_answer")
            t = t.set_column(t.schema.get_field_index("parse_status"), "parse_status", pa.array(status.tolist()))
            pq.write_table(t, path)
            metrics = [r.metrics[0], MetricValue("parse_rate", float((status == "ok").mean()), 0.0, 1.0, "wilson"),
                       MetricValue("brier", brier, brier - 0.05, brier + 0.05, "bootstrap-percentile", "lower"),
                       MetricValue("calibration_slope", slope, slope - 0.3, slope + 0.3, "bootstrap-percentile",
                                   "target", 1.0)]
            r = msgspec.structs.replace(r, metrics=metrics)
        results.append(r)
    cat.results = results
    cat.ranks = rank_rows(data, cat.results, cat.tasks, read_ranks(data))
    publish(data, cat, now=NOW)
    return data


def test_metric_ranks_in_its_direction_with_its_own_rank_sets(tmp_path: Path) -> None:
    data = _published(tmp_path)
    with TestClient(create_app(data.root), base_url="http://testserver.local") as client:
        def board(q: str) -> dict:
            response = client.get(f"/v1/leaderboard?task=clinicalqa@0{q}")
            assert response.status_code == 200, response.text
            return response.json()

        default, by_accuracy = board(""), board("&metric=accuracy")
        assert default == by_accuracy and default["metric"] == "accuracy"
        ids = {v: k for k, v in RUN_IDS.items()}
        brier = board("&metric=brier")
        assert brier["metric"] == "brier" and [r["metric"]["name"] for r in brier["rows"]] == ["brier"] * 3
        assert [ids[r["run_id"]] for r in brier["rows"]] == ["medgemma-cqa0", "random-cqa0", "gptoss-cqa0"]  # ascending
        assert brier["rows"][0]["metric"]["direction"] == "lower"
        slope = board("&metric=calibration_slope")
        assert [ids[r["run_id"]] for r in slope["rows"]] == ["random-cqa0", "medgemma-cqa0", "gptoss-cqa0"]  # |v - 1|
        assert slope["rows"][0]["metric"]["target"] == 1.0
        assert "no rank interval is available for calibration_slope" in slope["rank_method"]
        assert [(r["rank_low"], r["rank_high"]) for r in slope["rows"]] == [(1, 1), (2, 2), (3, 3)]
        parse = board("&metric=parse_rate")
        values = [r["metric"]["value"] for r in parse["rows"]]
        assert values == sorted(values, reverse=True)
        assert "bootstrap" in parse["rank_method"] and "no rank interval" not in parse["rank_method"]
        # the parse-rate rank sets are the joint bootstrap of "the reply parsed", in the parse-rate order
        parsed = np.stack([pq.read_table(data.predictions_path(r["run_id"])).column("parse_status").to_numpy() == "ok"
                           for r in parse["rows"]])
        want = accuracy_rank_intervals(parsed, 100, 1, np.arange(1, 4))
        assert [r["rank_low"] for r in parse["rows"]] == want.rank_low.tolist()
        assert [r["rank_high"] for r in parse["rows"]] == want.rank_high.tolist()
        assert [r["marginal_rank_low"] for r in parse["rows"]] == want.marginal_rank_low.tolist()
        assert [r["tied_with_leader"] for r in parse["rows"]] == want.tied_with_leader.tolist()
        llm = board("&metric=brier&model_type=llm")
        assert [ids[r["run_id"]] for r in llm["rows"]] == ["medgemma-cqa0", "gptoss-cqa0"]
        assert [r["rank"] for r in llm["rows"]] == [1, 2]


def test_unknown_metric_is_metric_not_found_listing_the_tasks_metrics(tmp_path: Path) -> None:
    """Issue #40: a schema-valid ``metric=0`` answered 400 (schemathesis: "schema-valid request
    rejected"); an unknown metric is not found, as an unknown task is."""
    data = _published(tmp_path)
    with TestClient(create_app(data.root), base_url="http://testserver.local") as client:
        assert client.get("/v1/leaderboard?task=clinicalqa@0&metric=0").json()["error"] == "metric_not_found"
        response = client.get("/v1/leaderboard?task=clinicalqa@0&metric=auroc")
        assert response.status_code == 404
        body = response.json()
        assert body["error"] == "metric_not_found"
        assert "'auroc'" in body["message"] and "clinicalqa@0" in body["message"]
        for name in ("accuracy", "parse_rate", "brier", "calibration_slope"):
            assert name in body["message"]
        assert "\n" not in body["message"]
