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
from medbench.layout import DataDir


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


def _record(run_id: str, task: str):
    from types import SimpleNamespace

    return SimpleNamespace(run_id=run_id, task=task)


def test_a_kind_without_label_gets_its_own_typed_table_and_joins_the_view(tmp_path: Path) -> None:
    """A plug-in kind (regression: no ``label`` column) publishes into ``predictions_regression`` with
    its own types, and the ``predictions`` view unions it with the built-ins' tables (issue 38)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from warehouse.portable import DEFAULT_KIND_COLUMNS, create_prediction_tables

    data = DataDir(tmp_path / "data")
    reg_schema = pa.schema([("instance_id", pa.string()), ("predicted", pa.float64()), ("observed", pa.float64()),
                            ("patient_id", pa.string())])
    choice_schema = pa.schema([("instance_id", pa.string()), ("prediction", pa.string()), ("label", pa.string()),
                               ("correct", pa.bool_())])
    files = {"aaaaaaaaaaaa": ("pots@0", pa.table({"instance_id": ["1", "2"], "predicted": [4.1, 3.9],
                                                  "observed": [4.0, 3.8], "patient_id": ["p1", "p2"]},
                                                 schema=reg_schema)),
             "bbbbbbbbbbbb": ("qa@0", pa.table({"instance_id": ["x"], "prediction": ["A"], "label": ["A"],
                                                "correct": [True]}, schema=choice_schema))}
    for run_id, (_, table) in files.items():
        path = data.predictions_path(run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
    tasks = [{"slug": "pots", "version": 0, "kind": "regression"}, {"slug": "qa", "version": 0, "kind": "choice"}]
    columns = {**DEFAULT_KIND_COLUMNS, "regression": {"observed": "DOUBLE", "predicted": "DOUBLE"}}
    con = duckdb.connect()
    create_prediction_tables(con, data, [_record(r, t) for r, (t, _) in files.items()], tasks,
                             [reg_schema, choice_schema], columns)
    assert con.execute("SELECT run_id, typeof(observed), observed FROM predictions_regression ORDER BY instance_id"
                       ).fetchall() == [("aaaaaaaaaaaa", "DOUBLE", 4.0), ("aaaaaaaaaaaa", "DOUBLE", 3.8)]
    assert con.execute("SELECT count(*) FROM predictions_score").fetchone() == (0,)  # built-ins always there
    assert con.execute("SELECT typeof(label) FROM predictions_score").fetchall() == []
    view = con.execute("SELECT run_id, label, observed FROM predictions ORDER BY run_id, instance_id").fetchall()
    assert view == [("aaaaaaaaaaaa", None, 4.0), ("aaaaaaaaaaaa", None, 3.8), ("bbbbbbbbbbbb", "A", None)]


def test_the_rubric_kind_is_one_row_per_grade_with_the_answer_on_each(tmp_path: Path) -> None:
    """``predictions_rubric`` (issue 44): the per-item grade lists unnested into one row per
    (criterion, judge sample), the item's answer text repeated on each; empty, it is typed as unnested."""
    import pyarrow.parquet as pq

    from medbench.kinds.rubric import Rubric
    from warehouse.portable import DEFAULT_KIND_COLUMNS, create_prediction_tables

    data = DataDir(tmp_path / "data")
    pa_table = __import__("pyarrow").table(
        {"instance_id": ["q1"], "score": [0.5], "answer": ["PCI now"], "rubric_sha256": ["h"],
         "criterion_id": [["gold", "gold", "avoid-A", "avoid-A"]], "judge_sample": [[0, 1, 0, 1]],
         "met": [[True, False, False, False]], "justification": [["names PCI", "vague", "no", "no"]],
         "points": [[5.0, 5.0, -2.0, -2.0]]}, schema=Rubric.schema)
    path = data.predictions_path("cccccccccccc")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa_table, path)
    tasks = [{"slug": "open", "version": 0, "kind": "rubric"}, {"slug": "open", "version": 1, "kind": "rubric"}]
    columns = {**DEFAULT_KIND_COLUMNS, "rubric": {}}
    con = duckdb.connect()
    create_prediction_tables(con, data, [_record("cccccccccccc", "open@0")], tasks, [Rubric.schema, Rubric.schema],
                             columns, {"rubric": Rubric.sql_unnest})
    rows = con.execute("SELECT instance_id, criterion_id, judge_sample, met, justification, answer "
                       "FROM predictions_rubric ORDER BY criterion_id DESC, judge_sample").fetchall()
    assert rows == [("q1", "gold", 0, True, "names PCI", "PCI now"), ("q1", "gold", 1, False, "vague", "PCI now"),
                    ("q1", "avoid-A", 0, False, "no", "PCI now"), ("q1", "avoid-A", 1, False, "no", "PCI now")]
    # the predictions view keeps one row per item: the per-grade columns stay in predictions_rubric
    view = con.execute("SELECT run_id, instance_id, answer FROM predictions WHERE run_id = 'cccccccccccc'").fetchall()
    assert view == [("cccccccccccc", "q1", "PCI now")]
    view_columns = {c for c, in con.execute("SELECT column_name FROM information_schema.columns "
                                            "WHERE table_name = 'predictions'").fetchall()}
    assert not view_columns & set(Rubric.sql_unnest), view_columns
    empty = duckdb.connect()
    create_prediction_tables(empty, DataDir(tmp_path / "none"), [], tasks, [Rubric.schema, Rubric.schema], columns,
                             {"rubric": Rubric.sql_unnest})
    types = dict(empty.execute("SELECT column_name, data_type FROM information_schema.columns "
                               "WHERE table_name = 'predictions_rubric'").fetchall())
    assert types["met"] == "BOOLEAN" and types["criterion_id"] == "VARCHAR"
