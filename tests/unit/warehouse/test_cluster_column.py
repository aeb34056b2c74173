"""The warehouse records each task's cluster column, and ``/v1/compare`` resamples by it alone.

Neither ``api`` nor ``warehouse`` names a dataset's column: the resampling unit is what the
``tasks`` table says, the ``predictions`` view's columns are the files' (or, with no file yet, the
tasks' predictions schemas'), and an older file without the column still reads.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from litestar.testing import TestClient

from api.app import create_app
from api.tables import load_tables
from support.api_data import RUN_IDS, catalog
from support.paths import REPO
from medbench.layout import DataDir
from warehouse.publish import publish
from warehouse.read import read_version

IOH = ("neglastmap-ioh0", "logreg-ioh0")


def _publish(root: Path, cluster: str | None = "subjectid", **changes) -> DataDir:
    data = DataDir(root)
    cat = catalog(data)
    tasks = [{**t, "cluster_column": cluster} if t["kind"] == "score" else t for t in cat.tasks]
    publish(data, dataclasses.replace(cat, tasks=tasks, **changes))
    return data


def test_tasks_table_records_the_cluster_column(tmp_path: Path) -> None:
    data = _publish(tmp_path / "data")
    [version] = [p.name.removeprefix("medbench-").removesuffix(".duckdb") for p in data.warehouse.glob("medbench-*.duckdb")]
    rows = {t.ref: t.cluster_column for t in read_version(data, version).tasks}
    assert rows == {"clinicalqa@0": None, "clinicalqa@1": None, "vitaldb-ioh@0": "subjectid"}
    assert load_tables(data, version).task_by_ref["vitaldb-ioh@0"].cluster_column == "subjectid"


def test_compare_resamples_the_recorded_cluster_column_or_items(tmp_path: Path) -> None:
    a, b = RUN_IDS[IOH[0]], RUN_IDS[IOH[1]]
    answers = {}
    for cluster in ("subjectid", None):
        data = _publish(tmp_path / f"data-{cluster}", cluster)
        path = data.predictions_path(b)  # the fixture's files are alike: give b scores of its own
        t = pq.read_table(path)
        noisy = pa.array(np.random.default_rng(1).normal(size=t.num_rows) + t.column("label").to_numpy())
        pq.write_table(t.set_column(t.schema.get_field_index("score"), "score", noisy), path)
        with TestClient(create_app(data.root)) as client:
            answers[cluster] = client.get(f"/v1/compare?a={a}&b={b}").json()
    by_subject, by_item = answers["subjectid"], answers[None]
    assert re.search(r"over \d+ subjects", by_subject["method"]), by_subject
    assert f"over {by_item['n_shared']} items" in by_item["method"], by_item
    assert by_subject["difference"] == by_item["difference"]
    assert (by_subject["ci_low"], by_subject["ci_high"]) != (by_item["ci_low"], by_item["ci_high"])


def test_a_file_from_before_the_column_still_reads(tmp_path: Path) -> None:
    data = _publish(tmp_path / "data")
    [path] = list(data.warehouse.glob("medbench-*.duckdb"))
    con = duckdb.connect(str(path))
    con.execute("ALTER TABLE tasks DROP COLUMN cluster_column")
    con.close()
    version = path.name.removeprefix("medbench-").removesuffix(".duckdb")
    assert {t.cluster_column for t in read_version(data, version).tasks} == {None}


def test_the_empty_predictions_view_has_the_tasks_columns(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    schemas = [pa.schema([("instance_id", pa.string()), ("prediction", pa.string()), ("label", pa.string())]),
               pa.schema([("instance_id", pa.string()), ("score", pa.float64()), ("label", pa.int8()),
                          ("site", pa.int32())])]
    publish(data, dataclasses.replace(catalog(data), results=[], prediction_schemas=schemas))
    [path] = list(data.warehouse.glob("medbench-*.duckdb"))
    con = duckdb.connect(str(path), read_only=True)
    described = [(r[0], r[1]) for r in con.execute("DESCRIBE SELECT * FROM predictions").fetchall()]
    con.close()
    assert described == [("run_id", "VARCHAR"), ("instance_id", "VARCHAR"), ("prediction", "VARCHAR"),
                         ("label", "VARCHAR"), ("score", "DOUBLE"), ("site", "INTEGER")]


def test_api_and_warehouse_name_no_dataset_column() -> None:
    found = [f"{p.relative_to(REPO)}:{n}" for top in ("api", "warehouse", "medbench") for p in sorted((REPO / top).rglob("*"))
             if p.is_file() and p.suffix in (".py", ".html", ".txt", ".md", ".js", ".css")
             for n, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"subjectid|caseid", line)]
    assert not found, found
