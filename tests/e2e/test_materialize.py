"""`medbench materialize` end to end on the demo data, through Dagster."""

import json
import re

import duckdb
import pytest

from support.commands import run_medbench
from medbench.layout import DataDir
from warehouse.read import open_current

ROW = re.compile(r"^(\S+\|\S+)\s+(ran|reused|skipped|failed)\s+([0-9a-f]{12})?", re.M)


def outcomes(stdout: str) -> dict[str, tuple[str, str]]:
    return {m.group(1): (m.group(2), m.group(3)) for m in ROW.finditer(stdout)}


def results_table(data) -> dict[str, tuple]:
    snap = open_current(DataDir(data))
    try:
        rows = snap.con.execute("SELECT run_id, task, model_slug, metric_value, ci_low, ci_high, n FROM results").fetchall()
    finally:
        snap.close()
    return {r[0]: r[1:] for r in rows}


def test_demo_materializes_both_tasks(demo_data):
    results = results_table(demo_data)
    by_pair = {(task, model): rid for rid, (task, model, *_rest) in results.items()}
    assert ("clinicalqa@0", "medbench/random") in by_pair
    assert ("vitaldb-ioh@0", "medbench/neg-last-map") in by_pair
    data = DataDir(demo_data)
    for rid, (task, _model, value, lo, hi, n) in results.items():
        assert lo <= value <= hi
        record = json.loads(data.result_path(rid).read_bytes())
        assert record["demo"] is True and record["run_id"] == rid
        assert record["versions"]["dataset_snapshot"]
    neg_last_map = results[by_pair[("vitaldb-ioh@0", "medbench/neg-last-map")]]
    assert neg_last_map[2] > 0.6  # MAP alone predicts hypotension on the demo data too
    random = results[by_pair[("clinicalqa@0", "medbench/random")]]
    assert random[5] == 1045 and 0.1 < random[2] < 0.3


def test_every_instance_predicted_once(demo_data):
    con = duckdb.connect(str(DataDir(demo_data).duckdb_link), read_only=True)
    dupes = con.execute("SELECT run_id, instance_id, count(*) c FROM predictions GROUP BY ALL HAVING c > 1").fetchall()
    counts = dict(con.execute("SELECT r.task, count(*) FROM predictions p JOIN results r USING (run_id) GROUP BY 1").fetchall())
    con.close()
    assert dupes == []
    assert counts["clinicalqa@0"] % 1045 == 0


def test_second_run_reuses_everything(demo_data):
    before = results_table(demo_data)
    proc = run_medbench("materialize", "--demo", data=demo_data)
    got = outcomes(proc.stdout)
    assert got and all(status in ("reused", "skipped") for status, _ in got.values()), proc.stdout
    assert {rid for status, rid in got.values() if status == "reused"} == set(before)
    assert results_table(demo_data) == before
    assert "not rematerialized" in proc.stdout  # the inputs were current: no inputs run
    import dagster as dg

    from pipelines.dagster.inputs_state import shown_versions

    reused = {key: rid for key, (status, rid) in got.items() if status == "reused" and key.startswith("clinicalqa@")}
    with dg.DagsterInstance.from_config(str(demo_data / "dagster")) as instance:
        shown = shown_versions(instance, dg.AssetKey("clinicalqa_metrics"), list(reused))
    assert shown == reused  # the UI shows each reused partition with its run id


def test_dry_run_and_max_cost_start_nothing(demo_data):
    proc = run_medbench("materialize", "--demo", "--dry-run", data=demo_data)
    assert "would run 0," in proc.stdout and "reuse" in proc.stdout
    forced = run_medbench("materialize", "--demo", "--dry-run", "--force", "--model", "medbench/tiny-llama",
                          data=demo_data)
    assert re.search(r"clinicalqa@0\|medbench/tiny-llama\s+run\s+cpu", forced.stdout), forced.stdout
    refused = run_medbench("materialize", "--demo", "--force", "--model", "medbench/tiny-llama", "--max-cost", "0",
                           data=demo_data, check=False)
    assert refused.returncode == 1 and "above --max-cost 0" in refused.stderr, refused.stderr


def test_real_into_demo_dir_is_refused(demo_data):
    proc = run_medbench("materialize", data=demo_data, check=False)
    assert proc.returncode == 1
    assert "holds demo results" in proc.stderr and "MEDBENCH_DATA" in proc.stderr


def test_unknown_task_is_an_error(tmp_path):
    proc = run_medbench("materialize", "--demo", "--task", "nope@3", data=tmp_path, check=False)
    assert proc.returncode == 1 and "unknown task 'nope@3'" in proc.stderr


def test_usage_error_exits_2(tmp_path):
    proc = run_medbench("materialize", "--bogus", data=tmp_path, check=False)
    assert proc.returncode == 2


@pytest.mark.slow
def test_fresh_data_dir_reproduces_run_ids_and_metrics(demo_data, tmp_path):
    run_medbench("materialize", "--demo", data=tmp_path)
    assert results_table(tmp_path) == results_table(demo_data)


def test_tiny_llm_runs_end_to_end_through_transformers(demo_data):
    """The transformers backend, on the built-in tiny Llama, lands in the warehouse with usage and cost."""
    snap = open_current(DataDir(demo_data))
    try:
        (record,) = snap.con.execute(
            "SELECT record FROM results WHERE model_slug = 'medbench/tiny-llama' AND task = 'clinicalqa@0'").fetchone()
    finally:
        snap.close()
    r = json.loads(record)
    assert r["model"]["type"] == "llm" and r["n"] == 1045
    assert 0.0 <= r["parse_rate"] <= 1.0
    assert r["usage"]["prompt_tokens"] > 1045 and 0 < r["usage"]["completion_tokens"] <= 16 * 1045
    assert r["usage"]["hardware"].startswith("cpu")
    assert r["cost_usd"] > 0 and r["price_table_date"] == "2026-11-01"
    assert r["config"]["decoding"] == {"max_new_tokens": 16, "temperature": 0.0}
    assert "generation_key" not in r and r["versions"]["parser"] == "v4"  # a hash of unredacted settings: never published


def test_materializations_carry_typed_metadata_and_data_versions(demo_data):
    """The UI's staleness and plots rest on these: run ids as data versions, floats as floats."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(demo_data / "dagster")) as instance:
        def latest(asset: str):
            event = instance.get_latest_materialization_event(dg.AssetKey(asset))
            assert event is not None, asset
            return event.asset_materialization

        for asset in ("clinicalqa_metrics", "vitaldb_ioh_metrics", "clinicalqa_predictions", "vitaldb_ioh_predictions"):
            m = latest(asset)
            run_id = m.metadata["run_id"].value
            assert m.tags["dagster/data_version"] == run_id and m.tags["dagster/code_version"]
            assert isinstance(m.metadata["path"], dg.PathMetadataValue)
            assert not any(isinstance(v, dg.TextMetadataValue) and v.value == "n/a" for v in m.metadata.values())
        choice, score = latest("clinicalqa_metrics").metadata, latest("vitaldb_ioh_metrics").metadata
        for meta, name in ((choice, "accuracy"), (score, "auroc")):
            assert all(isinstance(meta[k], dg.FloatMetadataValue) for k in (name, "ci_low", "ci_high", "cost_usd"))
            assert isinstance(meta["n"], dg.IntMetadataValue)
        assert isinstance(choice["parse_rate"], dg.FloatMetadataValue) and "parse_rate" not in score
        snap = latest("vitaldb_snapshot")
        assert snap.tags["dagster/data_version"] == snap.metadata["snapshot_id"].value
        assert latest("vitaldb_ioh_windows").tags["dagster/data_version"].startswith(snap.metadata["snapshot_id"].value)
