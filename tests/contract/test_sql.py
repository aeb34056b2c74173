"""``medbench sql`` prints every column in full, and fails in one line.

Issue #23 (the analyst's first query): the README's one-liner ``python -c "import duckdb; ..."``
failed as printed (``ModuleNotFoundError``: duckdb is in the venv, not the system Python), and
DuckDB's display hid ``metric_value``. The printed queries now live on the docs' DuckDB page
(docs/duckdb.md), marked runnable: tests/contract/test_docs.py runs each exactly as printed. Here:
what ``medbench sql`` itself promises.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from support.commands import run_medbench


def test_every_column_and_value_is_printed_in_full(shared_data: tuple[Path, str]) -> None:
    root, _ = shared_data
    query = "SELECT run_id, task, model_slug, metric_name, metric_value, ci_low, ci_high, record FROM results ORDER BY run_id"
    out = run_medbench("sql", "--data", str(root), query, data=root).stdout
    header = out.splitlines()[0]
    for column in ("run_id", "task", "model_slug", "metric_name", "metric_value", "ci_low", "ci_high", "record"):
        assert re.search(rf"\b{column}\b", header), header
    records = run_medbench("sql", "--format", "json", "--data", str(root), query, data=root).stdout
    rows = json.loads(records)
    assert rows and all(row["record"] in out for row in rows)  # the whole JSON record, however wide
    assert all(str(row["metric_value"]) in out for row in rows)
    csv_out = run_medbench("sql", "--format", "csv", query, data=root).stdout  # the data directory from MEDBENCH_DATA
    parsed = list(csv.DictReader(io.StringIO(csv_out)))
    assert [r["record"] for r in parsed] == [r["record"] for r in rows]
    assert [float(r["metric_value"]) for r in parsed] == [r["metric_value"] for r in rows]


def test_a_sql_error_is_one_line_exit_2(shared_data: tuple[Path, str]) -> None:
    root, _ = shared_data
    for query in ("SELECT * FROM no_such_table", "SELEC 1", "CREATE TABLE x (a INT)"):
        proc = run_medbench("sql", query, data=root, check=False)
        assert proc.returncode == 2, (query, proc.returncode, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("medbench sql: ") and "Traceback" not in proc.stderr, lines
    proc = run_medbench("sql", "CREATE TABLE x (a INT)", data=root, check=False)
    assert "read-only" in proc.stderr, proc.stderr  # the warehouse is never changed


def test_no_published_warehouse_says_to_materialize_exit_1(tmp_path: Path) -> None:
    proc = run_medbench("sql", "SELECT 1", data=tmp_path / "empty", check=False)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "medbench materialize" in lines[0], lines
    assert not (tmp_path / "empty").exists()  # nothing created


def test_nothing_found_names_the_directory_and_how_to_choose_another(tmp_path: Path) -> None:
    """Issue #40: after the demo, a command acting on another directory said "run materialize --demo",
    which would not help; the message names where it looked and how to look elsewhere."""
    empty = tmp_path / "empty"
    proc = run_medbench("sql", "SELECT 1", data=empty, check=False)
    assert str(empty) in proc.stderr and "--data DIR" in proc.stderr and "MEDBENCH_DATA=DIR" in proc.stderr, proc.stderr


def test_data_may_name_the_duckdb_file_itself(shared_data: tuple[Path, str], tmp_path: Path) -> None:
    """Issue #40: ``--data FILE.duckdb`` (a moved file) was read as a data directory and blamed
    ``warehouse/CURRENT``; the file is queried read-only as it is."""
    root, _ = shared_data
    moved = tmp_path / "moved.duckdb"
    moved.write_bytes((root / "medbench.duckdb").resolve().read_bytes())
    proc = run_medbench("sql", "--data", str(moved), "--format", "csv", "SELECT count(*) AS n FROM results",
                        data=tmp_path / "elsewhere", check=False)
    assert proc.returncode == 0 and "CURRENT" not in proc.stderr, proc.stderr
    assert int(proc.stdout.splitlines()[1]) > 0, proc.stdout
