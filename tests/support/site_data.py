"""Warehouses for the website and compare tests, built on ``api_fixtures``' synthetic catalog.

The API fixture's runs share identical predictions and a placeholder ``accuracy_by_category``; the
site and the comparison need more: the choice scorer's real ``by_category`` extras (the result
page draws them), one model whose predictions are clearly better than another's on the same items
(a comparison with a known sign), a model name full of HTML (autoescaping), a demo twin of the
warehouse (the banner), and a leaderboard longer than a page shows (the 200 KB limit).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from pathlib import Path

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from support.api_data import RUN_IDS, catalog, make_record
from medbench.layout import DataDir
from warehouse.publish import publish
from medbench.records import ModelRef, ResultRecord

UTC = dt.UTC
NOW = dt.datetime(2026, 10, 29, 12, tzinfo=UTC)
HOSTILE_NAME = "<script>alert('x')</script> & \"Co\""
BETTER = "gptoss-cqa0"  # every answer right
WORSE = "random-cqa0"  # the API fixture's predictions (about a third right)
BULK = 120  # results on one board: more than a page shows


def by_category(value: float) -> list[dict]:
    return [
        {"category": "내과 <Internal medicine>", "n": 25, "accuracy": value, "ci_low": max(value - 0.1, 0.0),
         "ci_high": min(value + 0.1, 1.0)},
        {"category": "외과", "n": 15, "accuracy": value / 2, "ci_low": 0.0, "ci_high": min(value, 1.0)},
    ]


def _all_correct(path: Path) -> str:
    table = pq.read_table(path)
    labels = table.column("label")
    better = table.set_column(table.schema.get_field_index("prediction"), "prediction", labels)
    better = better.set_column(better.schema.get_field_index("correct"), "correct",
                               pa.array([True] * table.num_rows, pa.bool_()))
    better = better.set_column(better.schema.get_field_index("parse_status"), "parse_status",
                               pa.array(["ok"] * table.num_rows, pa.string()))
    pq.write_table(better, path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def site_catalog(data: DataDir, demo: bool, bulk: int = 0):
    cat = catalog(data)
    records: list[ResultRecord] = []
    for r in cat.results:
        extras = dict(r.extras)
        if r.task.startswith("clinicalqa"):
            extras = {"by_category": by_category(r.primary.value), "parse_status": {"ok": 34, "no_answer": 6}}
        changes: dict = {"extras": extras, "demo": demo}
        if r.run_id == RUN_IDS[BETTER]:
            changes["predictions_sha256"] = _all_correct(data.predictions_path(r.run_id))
        if r.run_id == RUN_IDS[WORSE]:
            changes["model"] = msgspec.structs.replace(r.model, name=HOSTILE_NAME)
        records.append(msgspec.structs.replace(r, **changes))
    for i in range(bulk):
        spec = ("medbench/random", "clinicalqa@0", 0.1 + 0.5 * i / bulk, dt.date(2026, 10, 5),
                dt.datetime(2026, 10, 5, 9, tzinfo=UTC), "v2", None)
        r = make_record(data, f"bulk-{i}", spec)
        model = ModelRef(f"bulk/model-{i:03d}", f"Bulk model {i}", "ml", "bulk", f"model-{i:03d}", "1")
        records.append(msgspec.structs.replace(r, model=model, demo=demo))
    return dataclasses.replace(cat, results=records, demo=demo)


def publish_site(root: Path, demo: bool, bulk: int = 0) -> Path:
    data = DataDir(root)
    publish(data, site_catalog(data, demo, bulk), now=NOW)
    return root






