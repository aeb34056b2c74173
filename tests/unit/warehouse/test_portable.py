"""The published DuckDB file answers from anywhere (issue 28): predictions and releases live inside it.

The data directory is copied to another path and the original removed, then the file is opened from
another working directory: every documented table answers, with typed labels.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb

from support.api_data import RUN_IDS, publish_fixture
from warehouse.layout import DataDir


def test_the_file_answers_after_the_data_directory_moves(tmp_path: Path, monkeypatch) -> None:
    original = tmp_path / "first" / "data"
    version = publish_fixture(original)
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(original, moved, symlinks=True)
    shutil.rmtree(original)
    cwd = tmp_path / "another" / "cwd"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    con = duckdb.connect(str(moved / "medbench.duckdb"), read_only=True)
    try:
        choice = con.execute("SELECT count(*), count(DISTINCT run_id), typeof(any_value(label)) "
                             "FROM predictions_choice").fetchone()
        assert choice == (5 * 40, 5, "VARCHAR")
        score = con.execute("SELECT count(*), avg(label), typeof(any_value(label)) FROM predictions_score").fetchone()
        assert score[0] == 2 * 24 and 0 < score[1] < 1 and score[2] == "INTEGER"
        assert con.execute("SELECT count(*) FROM predictions").fetchone() == (5 * 40 + 2 * 24,)
        runs = {r for (r,) in con.execute("SELECT DISTINCT run_id FROM predictions").fetchall()}
        assert runs == set(RUN_IDS.values())
        assert con.execute("SELECT id, n_results FROM releases").fetchall() == [(version, len(RUN_IDS))]
        assert con.execute("SELECT DISTINCT status FROM results ORDER BY 1").fetchall() == [("current",), ("superseded",)]
    finally:
        con.close()
    assert os.getcwd() == str(cwd) and DataDir(moved).release_log.exists()
