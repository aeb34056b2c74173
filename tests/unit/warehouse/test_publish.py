"""Publishing is atomic behind a pointer, keeps three versions, and never disturbs open readers."""

import datetime as dt
import os
import threading

import duckdb
import pytest

from medbench.layout import DataDir, DemoOrRealError
from warehouse.publish import Catalog, current_version, publish, superseded_map
from warehouse.read import NoWarehouse, open_current
from medbench.records import MetricValue, ModelRef, ResultRecord, UsageRecord, Versions


def record(run_id: str, model: str = "p/m", task: str = "t@0", value: float = 0.5, minute: int = 0) -> ResultRecord:
    return ResultRecord(
        run_id=run_id, task=task, dataset="d", model=ModelRef(model, "M", "rule", model.split("/")[0], "m", "1"),
        tier="baseline", demo=True, metrics=[MetricValue("accuracy", value, value - 0.1, value + 0.1)], n=10,
        parse_rate=1.0, cost_usd=0.0, eval_date=dt.date(2026, 12, 1),
        created_at=dt.datetime(2026, 12, 1, 0, minute, tzinfo=dt.timezone.utc), contamination=None, config={},
        versions=Versions("th", "mh", "snap", "v1", "rev", {"numpy": "2"}),
        usage=UsageRecord(None, None, 1.0, "cpu"), price_table_date=dt.date(2026, 11, 1), predictions_sha256="0" * 64,
    )


def catalog(results) -> Catalog:
    return Catalog(
        datasets=[{"slug": "d", "name": "D", "license": "CC BY 4.0", "license_url": "u", "citation": "c", "doi": "x",
                   "public_since": dt.date(2025, 1, 1), "description": "", "source": {"kind": "k"}, "snapshot_id": "s"}],
        tasks=[{"slug": "t", "version": 0, "dataset": "d", "kind": "choice", "title": "T", "description": "",
                "primary_metric": "accuracy", "preview": True, "spec_hash": "h", "spec": {"slug": "t"}}],
        models=[], results=list(results), demo=True,
    )


def test_publish_and_read(tmp_path):
    data = DataDir(tmp_path)
    version, changed = publish(data, catalog([record("aaaaaaaaaaaa")]))
    assert changed and current_version(data) == version
    snap = open_current(data)
    assert snap.con.execute("SELECT count(*) FROM results").fetchone()[0] == 1
    assert snap.con.execute("SELECT value FROM meta WHERE key='warehouse_version'").fetchone()[0] == version
    assert os.path.realpath(data.duckdb_link) == str(data.version_file(version))
    snap.close()


def test_same_content_keeps_version(tmp_path):
    data = DataDir(tmp_path)
    v1, _ = publish(data, catalog([record("aaaaaaaaaaaa")]))
    v2, changed = publish(data, catalog([record("aaaaaaaaaaaa")]))
    assert (v2, changed) == (v1, False)


def test_open_reader_survives_publishes_and_three_versions_kept(tmp_path):
    data = DataDir(tmp_path)
    publish(data, catalog([record("aaaaaaaaaaaa")]), now=dt.datetime(2026, 1, 1, 0, 0, 0))
    reader = open_current(data)
    for i in range(1, 5):
        publish(data, catalog([record("aaaaaaaaaaaa"), record(f"{i:012d}", model=f"p/m{i}")]),
                now=dt.datetime(2026, 1, 1, 0, 0, i))
    # The old reader still sees its own consistent version, although the file was pruned.
    assert reader.con.execute("SELECT count(*) FROM results").fetchone()[0] == 1
    reader.close()
    assert len(list(data.warehouse.glob("medbench-*.duckdb"))) == 3
    assert open_current(data).con.execute("SELECT count(*) FROM results").fetchone()[0] == 2


def test_pointer_never_names_a_half_built_file(tmp_path):
    """Readers racing a publisher always open a complete file named by the pointer."""
    data = DataDir(tmp_path)
    publish(data, catalog([record("aaaaaaaaaaaa")]))
    stop = threading.Event()
    failures: list[Exception] = []

    def read_loop():
        while not stop.is_set():
            try:
                snap = open_current(data)
                n = snap.con.execute("SELECT count(*) FROM results").fetchone()[0]
                version = snap.con.execute("SELECT value FROM meta WHERE key='warehouse_version'").fetchone()[0]
                assert n >= 1 and version == snap.version
                snap.close()
            except Exception as exc:  # noqa: BLE001 - collected and asserted below
                failures.append(exc)

    threads = [threading.Thread(target=read_loop) for _ in range(2)]
    for t in threads:
        t.start()
    for i in range(8):
        publish(data, catalog([record("aaaaaaaaaaaa"), record(f"{i:012d}", model=f"p/x{i}")]))
    stop.set()
    for t in threads:
        t.join()
    assert not failures, failures[:3]


def test_superseded_points_to_newest_run_of_same_model_and_task():
    old, new, other = record("aaaaaaaaaaaa", minute=1), record("bbbbbbbbbbbb", minute=2), record("cccccccccccc", model="q/z")
    assert superseded_map([old, new, other]) == {"aaaaaaaaaaaa": "bbbbbbbbbbbb"}


def test_no_warehouse_is_a_clear_error(tmp_path):
    with pytest.raises(NoWarehouse, match="medbench materialize"):
        open_current(DataDir(tmp_path))


def test_demo_and_real_never_mix(tmp_path):
    data = DataDir(tmp_path)
    data.claim("demo")
    data.claim("demo")
    with pytest.raises(DemoOrRealError, match="refusing to materialize real results"):
        data.claim("real")


def test_predictions_view_reads_artifacts(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = DataDir(tmp_path)
    r = record("aaaaaaaaaaaa")
    data.run_dir(r.run_id).mkdir(parents=True)
    pq.write_table(pa.table({"instance_id": ["1", "2"], "prediction": ["A", None], "label": ["A", "B"],
                             "correct": [True, False], "parse_status": ["ok", "no_answer"], "raw_output": ["A", ""]}),
                   data.predictions_path(r.run_id))
    publish(data, catalog([r]))
    con = duckdb.connect(str(os.path.realpath(data.duckdb_link)), read_only=True)
    rows = con.execute("SELECT run_id, instance_id, correct FROM predictions ORDER BY instance_id").fetchall()
    assert rows == [("aaaaaaaaaaaa", "1", True), ("aaaaaaaaaaaa", "2", False)]
