"""The README's analyst queries work as printed, and ``medbench sql`` prints every column.

Issue #23 (the analyst's first query): the README's one-liner ``python -c "import duckdb; ..."``
failed as printed (``ModuleNotFoundError``: duckdb is in the venv, not the system Python), and
DuckDB's display hid ``metric_value``. Every command in the fenced blocks of "The DuckDB file, for
analysts" is run here exactly as printed, from a folder laid out like a checkout after
``./scripts/setup`` and ``medbench demo`` (``.venv``, ``data/demo``), so an edit of that section
cannot go untested.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.commands import run_medbench
from support.paths import REPO

SECTION = "## The DuckDB file, for analysts"


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    start = text.index(SECTION) + len(SECTION)
    end = re.search(r"^#{2,3} ", text[start:], re.MULTILINE)
    section = text[start:start + end.start()] if end else text[start:]
    commands = []
    for block in re.findall(r"^```(?:bash|sh|shell)?\n(.*?)^```", section, re.MULTILINE | re.DOTALL):
        pending = ""
        for line in block.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            commands.append(pending + line)
            pending = ""
    return commands


COMMANDS = readme_commands()


@pytest.fixture(scope="module")
def checkout(shared_data: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``.venv`` (the venv running the tests) and ``data/demo`` (a published warehouse)."""
    root, _ = shared_data
    folder = tmp_path_factory.mktemp("checkout")
    (folder / ".venv").symlink_to(Path(sys.prefix))
    (folder / "data").mkdir()
    (folder / "data" / "demo").symlink_to(root)
    return folder


def test_the_section_has_runnable_queries() -> None:
    assert len(COMMANDS) >= 5, COMMANDS
    for command in COMMANDS:  # the system Python has no duckdb; a bare `medbench` needs an activated venv
        assert command.startswith((".venv/bin/medbench sql ", ".venv/bin/python ")), command


@pytest.mark.parametrize("command", COMMANDS)
def test_each_readme_query_runs_as_printed(checkout: Path, command: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MEDBENCH_DATA"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))  # this checkout's code
    proc = subprocess.run(["bash", "-c", command], cwd=checkout, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, (command, proc.stderr[-2000:])
    out = proc.stdout.strip()
    assert out and "(0 rows)" not in out and out != "[]", (command, out)
    if "--format csv" in command:
        assert len(out.splitlines()) >= 2, out  # a header and at least one row


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
