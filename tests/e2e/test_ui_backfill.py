"""The maintainer's path in the UI, for real: ``dagster-webserver`` and ``dagster-daemon`` on the
checkout's dagster.yaml, and the GraphQL mutation the UI's "Materialize all" -> "Launch backfill"
sends (every evaluation asset, all partitions, and the published warehouse).

Over the demo with one result removed: the backfill ends COMPLETED_SUCCESS (green), each family is
one ranged run, the one partition that needs work is its own queued run (tagged with its pool, in
the backfill), the vLLM pair that cannot run here is recorded as skipped with its reason, and the
published warehouse then equals the CLI's, ignoring timestamps and wall times."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from support.paths import REPO

from bench._dagster_ui import DagsterUI, sync_partitions
from pipelines.dagster import engine_calls as engine
from pipelines.dagster.child_runs import PARENT_TAG
from pipelines.dagster.definitions import FAMILY_ASSETS
from support.plugins import specs as load_specs
from medbench.layout import DataDir

pytestmark = pytest.mark.slow
WORK = "vitaldb-ioh@0|medbench/neg-last-map"
VLLM = "clinicalqa@0|google/medgemma-27b-text-it"
# Columns that differ between two evaluations of the same run id (when and how long), nothing else. The
# signature signs the whole record with its signed_at (warehouse.signing), so it differs with them.
VOLATILE = {"results": {"eval_date", "created_at", "record", "signature"}}
TABLES = ["results", "metrics", "leaderboard_ranks", "baseline_comparisons", "models", "tasks", "datasets",
          "predictions"]

def warehouse_rows(data: Path) -> dict[str, list[tuple]]:
    """Every table of the published warehouse, sorted, without the volatile columns."""
    out = {}
    with duckdb.connect(str(data / "medbench.duckdb"), read_only=True) as con:
        for table in TABLES:
            cols = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns "
                                              "WHERE table_name = ? ORDER BY ordinal_position", [table]).fetchall()
                    if c not in VOLATILE.get(table, set())]
            out[table] = sorted(con.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall(), key=repr)
    return out


def test_materialize_all_from_the_ui_reuses_skips_ends_green_and_publishes_the_clis_warehouse(demo_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(demo_data, data, ignore=shutil.ignore_patterns("dagster"))
    work_run = engine.resolve_evaluation(load_specs(), DataDir(data), *engine.split_partition_key(WORK)).run_id
    (data / "artifacts" / work_run / "result.json").unlink()  # this one needs work again
    home = tmp_path / "dagster-home"
    home.mkdir()
    shutil.copyfile(REPO / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), "MEDBENCH_DATA": str(data), "PYTHONUNBUFFERED": "1"}
    sync_partitions(env)
    assets = [a for fa in FAMILY_ASSETS.values() for a in (fa.predictions, fa.metrics)] + ["published_warehouse"]
    with DagsterUI(env, tmp_path / "logs") as ui:
        started = time.monotonic()
        backfill_id = ui.launch_backfill(assets)
        status = ui.wait_backfill(backfill_id, timeout=600)
        print(f"backfill of every evaluation partition: {status} in {time.monotonic() - started:.1f} s")
        daemon_log = ui.log_tail("daemon")
    assert status == "COMPLETED_SUCCESS", daemon_log
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.get_run_records(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
        t0 = min(r.create_timestamp.timestamp() for r in records)
        for r in sorted(records, key=lambda r: r.create_timestamp):
            print(f"  {r.dagster_run.job_name:28} {r.dagster_run.tags.get('dagster/partition', 'range'):48} created "
                  f"+{r.create_timestamp.timestamp() - t0:5.1f} s, started +{(r.start_time or t0) - t0:5.1f} s, "
                  f"ended +{(r.end_time or t0) - t0:5.1f} s")
        runs = [r.dagster_run for r in records]
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), [(r.job_name, r.status) for r in runs]
        ranged = [r for r in runs if "dagster/asset_partition_range_start" in r.tags]
        assert len(ranged) == len(FAMILY_ASSETS)  # one run per family, whatever its number of partitions
        children = [r for r in runs if PARENT_TAG in r.tags]
        assert [(r.tags["dagster/partition"], r.tags["medbench/pool"]) for r in children] == [(WORK, "cpu")]
        assert children[0].tags[PARENT_TAG] in {r.run_id for r in ranged}
        newest_first = instance.fetch_materializations(dg.AssetKey(FAMILY_ASSETS["clinicalqa"].predictions),
                                                       limit=50).records
        latest = {rec.partition_key: rec for rec in reversed(newest_first)}
        assert "cannot run here" in latest[VLLM].asset_materialization.metadata["skipped_reason"].value
        # No check left planned-but-unexecuted (the UI's "Skipped"): each has a verdict on every partition.
        from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus as Status
        from dagster._core.storage.event_log.base import PartitionKeyFilter

        from pipelines.dagster.definitions import CHECKS
        for fa in FAMILY_ASSETS.values():
            keys = {dg.AssetKey(fa.predictions), dg.AssetKey(fa.metrics)}
            checks = [k for c in CHECKS for k in c.check_keys if k.asset_key in keys]
            for partition in instance.get_materialized_partitions(dg.AssetKey(fa.metrics)):
                got = instance.event_log_storage.get_latest_asset_check_execution_by_key(
                    checks, partition_filter=PartitionKeyFilter(key=partition))
                assert set(got) == set(checks), partition
                assert all(r.status in (Status.SUCCEEDED, Status.FAILED) for r in got.values()), (partition, got)
    assert (data / "artifacts" / work_run / "result.json").exists()
    assert warehouse_rows(data) == warehouse_rows(demo_data)
