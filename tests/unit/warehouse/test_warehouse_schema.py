"""The row Structs generate today's tables exactly; typed reads; old files upgrade on the next publish."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.tables import load_tables
from support.api_data import catalog
from medbench.layout import DataDir
from warehouse.publish import publish
from warehouse.read import (
    Catalogue,
    NoWarehouse,
    current_result,
    leaderboard_lines,
    read_meta,
    read_metrics,
    read_version,
    result_by_id,
)
from warehouse.schema import CREATE_TABLES, SCHEMA_VERSION, DatasetRow, ResultRow, TaskRow

UTC = dt.timezone.utc
FIRST = dt.datetime(2026, 10, 29, 12, tzinfo=UTC)

# The tables as first published (schema version 1), transcribed from docs/duckdb.md: analysts rely on
# these names, types and this order, so the generated DDL must reproduce them exactly.
SCHEMA_1 = [
    "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    """CREATE TABLE datasets (
        slug VARCHAR PRIMARY KEY, name VARCHAR, license VARCHAR, license_url VARCHAR, citation VARCHAR,
        doi VARCHAR, public_since DATE, description VARCHAR, source JSON, snapshot_id VARCHAR)""",
    """CREATE TABLE tasks (
        slug VARCHAR, version INTEGER, ref VARCHAR PRIMARY KEY, dataset VARCHAR, kind VARCHAR, title VARCHAR,
        primary_metric VARCHAR, preview BOOLEAN, spec_hash VARCHAR, spec JSON, description VARCHAR)""",
    """CREATE TABLE models (
        slug VARCHAR PRIMARY KEY, name VARCHAR, type VARCHAR, provider VARCHAR, provider_model_id VARCHAR,
        revision VARCHAR, release_date DATE, knowledge_cutoff DATE, backend VARCHAR, description VARCHAR,
        spec_hash VARCHAR, spec JSON)""",
    """CREATE TABLE results (
        run_id VARCHAR PRIMARY KEY, task VARCHAR, task_slug VARCHAR, task_version INTEGER, dataset VARCHAR,
        model_slug VARCHAR, model_type VARCHAR, tier VARCHAR, demo BOOLEAN,
        metric_name VARCHAR, metric_value DOUBLE, ci_low DOUBLE, ci_high DOUBLE,
        n INTEGER, parse_rate DOUBLE, cost_usd DOUBLE, eval_date DATE, created_at TIMESTAMPTZ,
        contamination BOOLEAN, superseded_by VARCHAR, dataset_snapshot VARCHAR, task_spec_hash VARCHAR,
        model_spec_hash VARCHAR, parser VARCHAR, code_revision VARCHAR, price_table_date DATE,
        predictions_sha256 VARCHAR, record JSON)""",
    """CREATE TABLE metrics (
        run_id VARCHAR, ordinal INTEGER, name VARCHAR, value DOUBLE, ci_low DOUBLE, ci_high DOUBLE,
        PRIMARY KEY (run_id, name))""",
]


# Added in schema version 3 (the changelog in docs/duckdb.md): the rank intervals of every leaderboard.
SCHEMA_3_RANKS = [
    """CREATE TABLE leaderboard_ranks (
        task VARCHAR, model_type VARCHAR, run_id VARCHAR, rank INTEGER, rank_low INTEGER, rank_high INTEGER,
        tied_with_leader BOOLEAN, leader_run_id VARCHAR, diff_low DOUBLE, diff_high DOUBLE, method VARCHAR,
        replicates INTEGER, dropped_replicates INTEGER, seed INTEGER, n_items INTEGER, results_key VARCHAR,
        PRIMARY KEY (task, model_type, run_id))""",
]


def _describe(statements: list[str]) -> tuple[list, list]:
    con = duckdb.connect()
    for statement in statements:
        con.execute(statement)
    columns = con.execute(
        "SELECT table_name, ordinal_position, column_name, data_type, is_nullable FROM information_schema.columns "
        "ORDER BY table_name, ordinal_position"
    ).fetchall()
    constraints = con.execute(
        "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints() ORDER BY ALL"
    ).fetchall()
    con.close()
    return columns, constraints


# Schema 3: ``metrics`` gains ``method``; the table ``baseline_comparisons`` is added.
SCHEMA_3 = [s for s in SCHEMA_1 if not s.startswith("""CREATE TABLE metrics""")] + [
    """CREATE TABLE metrics (
        run_id VARCHAR, ordinal INTEGER, name VARCHAR, value DOUBLE, ci_low DOUBLE, ci_high DOUBLE, method VARCHAR,
        PRIMARY KEY (run_id, name))""",
    """CREATE TABLE baseline_comparisons (
        run_id VARCHAR, baseline_run_id VARCHAR, baseline_model VARCHAR, metric VARCHAR, difference DOUBLE,
        ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, method VARCHAR, replicates INTEGER, seed INTEGER,
        dropped_replicates INTEGER, PRIMARY KEY (run_id, baseline_run_id))""",
]


# Schema 4: ``tasks`` gains ``cluster_column`` (the resampling unit of the task's intervals; NULL: items).
SCHEMA_4 = [s for s in SCHEMA_3 if not s.startswith("""CREATE TABLE tasks""")] + [
    """CREATE TABLE tasks (
        slug VARCHAR, version INTEGER, ref VARCHAR PRIMARY KEY, dataset VARCHAR, kind VARCHAR, title VARCHAR,
        primary_metric VARCHAR, preview BOOLEAN, spec_hash VARCHAR, spec JSON, description VARCHAR,
        cluster_column VARCHAR)""",
]

# Schema 5: ``tasks`` gains ``participant_flow`` (score tasks: cases -> exclusions -> cohort -> windows -> splits);
# ``results`` gains ``contamination_status`` and ``contamination_basis`` (at the end);
# ``baseline_comparisons`` gains ``p_at_floor``.
_SCHEMA_5_CHANGED = ("CREATE TABLE tasks", "CREATE TABLE results", "CREATE TABLE baseline_comparisons")
SCHEMA_5 = [s for s in SCHEMA_4 if not s.startswith(_SCHEMA_5_CHANGED)] + [
    """CREATE TABLE tasks (
        slug VARCHAR, version INTEGER, ref VARCHAR PRIMARY KEY, dataset VARCHAR, kind VARCHAR, title VARCHAR,
        primary_metric VARCHAR, preview BOOLEAN, spec_hash VARCHAR, spec JSON, description VARCHAR,
        cluster_column VARCHAR, participant_flow JSON)""",
    """CREATE TABLE results (
        run_id VARCHAR PRIMARY KEY, task VARCHAR, task_slug VARCHAR, task_version INTEGER, dataset VARCHAR,
        model_slug VARCHAR, model_type VARCHAR, tier VARCHAR, demo BOOLEAN,
        metric_name VARCHAR, metric_value DOUBLE, ci_low DOUBLE, ci_high DOUBLE,
        n INTEGER, parse_rate DOUBLE, cost_usd DOUBLE, eval_date DATE, created_at TIMESTAMPTZ,
        contamination BOOLEAN, superseded_by VARCHAR, dataset_snapshot VARCHAR, task_spec_hash VARCHAR,
        model_spec_hash VARCHAR, parser VARCHAR, code_revision VARCHAR, price_table_date DATE,
        predictions_sha256 VARCHAR, record JSON, contamination_status VARCHAR, contamination_basis VARCHAR)""",
    """CREATE TABLE baseline_comparisons (
        run_id VARCHAR, baseline_run_id VARCHAR, baseline_model VARCHAR, metric VARCHAR, difference DOUBLE,
        ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, method VARCHAR, replicates INTEGER, seed INTEGER,
        dropped_replicates INTEGER, p_at_floor BOOLEAN, PRIMARY KEY (run_id, baseline_run_id))""",
]

# Schema 5 also: ``leaderboard_ranks`` gains ``metric`` (one block per published metric, in the key) and the
# marginal interval; ``rank_low``/``rank_high`` become the hull of the simultaneous set and the marginal one.
SCHEMA_5_RANKS = [
    """CREATE TABLE leaderboard_ranks (
        task VARCHAR, model_type VARCHAR, metric VARCHAR, run_id VARCHAR, rank INTEGER, rank_low INTEGER,
        rank_high INTEGER, marginal_rank_low INTEGER, marginal_rank_high INTEGER, tied_with_leader BOOLEAN,
        leader_run_id VARCHAR, diff_low DOUBLE, diff_high DOUBLE, method VARCHAR, replicates INTEGER,
        dropped_replicates INTEGER, seed INTEGER, n_items INTEGER, results_key VARCHAR,
        PRIMARY KEY (task, model_type, metric, run_id))""",
]


# Schema 6: ``results`` gains ``status``, ``withdrawn_reason``, ``withdrawn_date``, ``signature`` (at the end);
# the table ``releases`` mirrors the release log (the predictions tables are built from the files, not declared here).
SCHEMA_6 = [s for s in SCHEMA_5 if not s.startswith("CREATE TABLE results")] + [
    """CREATE TABLE results (
        run_id VARCHAR PRIMARY KEY, task VARCHAR, task_slug VARCHAR, task_version INTEGER, dataset VARCHAR,
        model_slug VARCHAR, model_type VARCHAR, tier VARCHAR, demo BOOLEAN,
        metric_name VARCHAR, metric_value DOUBLE, ci_low DOUBLE, ci_high DOUBLE,
        n INTEGER, parse_rate DOUBLE, cost_usd DOUBLE, eval_date DATE, created_at TIMESTAMPTZ,
        contamination BOOLEAN, superseded_by VARCHAR, dataset_snapshot VARCHAR, task_spec_hash VARCHAR,
        model_spec_hash VARCHAR, parser VARCHAR, code_revision VARCHAR, price_table_date DATE,
        predictions_sha256 VARCHAR, record JSON, contamination_status VARCHAR, contamination_basis VARCHAR,
        status VARCHAR, withdrawn_reason VARCHAR, withdrawn_date DATE, signature JSON)""",
    """CREATE TABLE releases (
        id VARCHAR PRIMARY KEY, published_at TIMESTAMPTZ, n_results INTEGER, tasks JSON, manifest_sha256 VARCHAR,
        previous VARCHAR, manifest JSON, signature JSON)""",
]


def test_generated_ddl_is_the_documented_schema() -> None:
    assert _describe(CREATE_TABLES) == _describe(SCHEMA_6 + SCHEMA_5_RANKS)


def test_published_file_has_the_schema_and_the_schema_version(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    version, _ = publish(data, catalog(data), now=FIRST)
    con = duckdb.connect(str(data.version_file(version)), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                           "WHERE table_name = 'results' ORDER BY ordinal_position").fetchall()]
        views = [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]
    finally:
        con.close()
    assert names == list(ResultRow.__struct_fields__)
    assert views == ["predictions"]
    assert read_meta(data, version)["schema_version"] == str(SCHEMA_VERSION)


def test_catalogue_reads_typed_rows(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    with pytest.raises(NoWarehouse):
        Catalogue.open(data)
    version, _ = publish(data, catalog(data), now=FIRST)
    cat = Catalogue.open(data)
    assert cat.version == version and cat.schema_version == SCHEMA_VERSION and cat.demo is False
    assert all(isinstance(d, DatasetRow) for d in cat.datasets) and [d.slug for d in cat.datasets] == ["clinicalqa", "vitaldb"]
    assert all(isinstance(t, TaskRow) for t in cat.tasks)
    assert [t.ref for t in cat.tasks] == ["clinicalqa@0", "clinicalqa@1", "vitaldb-ioh@0"]
    assert isinstance(cat.datasets[0].public_since, dt.date)
    assert [p.run_id for p in cat.results] == sorted(p.run_id for p in cat.results)

    first = cat.results[0]
    assert result_by_id(data, first.run_id) == first
    assert result_by_id(data, "0" * 12) is None
    metrics = read_metrics(data, version, first.run_id)
    assert [(m.name, m.value) for m in metrics] == [(m.name, m.value) for m in first.record.metrics]

    # lookup's answer for a pair with two runs: the newer one, which supersedes the older
    superseded = [p for p in cat.results if p.superseded_by]
    assert superseded
    older = superseded[0]
    chosen = current_result(data, older.record.model.slug, older.record.task)
    assert chosen is not None and chosen.run_id == older.superseded_by and chosen.superseded_by is None
    assert current_result(data, "nobody/none", "clinicalqa@0") is None

    lines = leaderboard_lines(data)
    assert {line.run_id for line in lines} == {p.run_id for p in cat.results if p.superseded_by is None}
    assert older.run_id not in {line.run_id for line in lines}


def _strip_schema_version(data: DataDir, version: str) -> None:
    """Make ``version`` look like a file built before schema_version existed (schema version 1)."""
    con = duckdb.connect(str(data.version_file(version)))
    try:
        con.execute("DELETE FROM meta WHERE key = 'schema_version'")
        con.execute("CHECKPOINT")
    finally:
        con.close()


def test_an_old_warehouse_is_read_then_rebuilt_by_the_next_publish(tmp_path: Path) -> None:
    root = tmp_path / "data"
    data = DataDir(root)
    old, _ = publish(data, catalog(data), now=FIRST)
    _strip_schema_version(data, old)

    # The reader accepts the old file as it is.
    before = read_version(data, old)
    assert before.schema_version == 1
    assert len(load_tables(data, old).results) == len(before.results)

    # Same content, older schema: the next publish rebuilds it anyway, with the key.
    new, changed = publish(data, catalog(data), now=FIRST + dt.timedelta(hours=1))
    assert changed and new != old
    meta = read_meta(data, new)
    assert meta["schema_version"] == str(SCHEMA_VERSION)
    assert meta["content_hash"] == read_meta(data, old)["content_hash"]
    after = read_version(data, new)
    assert after.results == before.results and after.datasets == before.datasets and after.tasks == before.tasks

    # ... and once it is current, an identical publish keeps it.
    assert publish(data, catalog(data), now=FIRST + dt.timedelta(hours=2)) == (new, False)

    with TestClient(create_app(root)) as client:
        health = client.get("/healthz")
        assert health.status_code == 200 and health.json()["warehouse_version"] == new
        stats = client.get("/v1/stats").json()
        assert stats["results"] == len(after.results) and stats["warehouse_version"] == new
        result = client.get(f"/v1/results/{after.results[0].run_id}")
        assert result.status_code == 200 and result.json()["run_id"] == after.results[0].run_id
