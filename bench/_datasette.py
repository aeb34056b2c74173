"""The alternative the API is measured against: Datasette serving the same tables read-only.

Datasette is what people reach for to publish a read-only data API from a database. It gets an
immutable SQLite copy of the published DuckDB tables (same columns, the same primary keys, and the
indexes a careful publisher would add), and one plugin-free route per API route: a canned query for
lookup (the newest non-superseded result of the model and task, the full record) and for the
leaderboard (current results ordered like ours), and Datasette's own row page for a result by run id.
Everything is asked for as JSON (``.json?_shape=array``).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import sys
from pathlib import Path

import duckdb

DATABASE = "copy"  # the name Datasette gives copy.db, the first segment of its URLs
TABLES = ("meta", "datasets", "tasks", "models", "results", "metrics")
INDEXES = (
    "CREATE INDEX results_task_model ON results (task, model_slug)",
    "CREATE INDEX results_board ON results (task, superseded_by, metric_value)",
    "CREATE INDEX models_provider_id ON models (provider_model_id)",
)
LOOKUP_SQL = """
select record from results
where task = :task
  and model_slug in (select slug from models where slug = :model or provider_model_id = :model)
order by superseded_by is null desc, created_at desc, run_id desc
limit 1
"""
LEADERBOARD_SQL = """
select r.run_id, r.task, r.model_slug, m.name as model_name, m.type as model_type, m.provider, r.tier,
       r.metric_name, r.metric_value, r.ci_low, r.ci_high, r.n, r.parse_rate, r.cost_usd, r.eval_date,
       r.demo, r.contamination
from results r join models m on m.slug = r.model_slug
where r.task = :task and r.superseded_by is null
order by r.metric_value desc, r.eval_date, r.run_id
limit 100
"""


def _sqlite_value(value: object) -> object:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return value


def sqlite_copy(duckdb_file: Path, target: Path) -> None:
    """Copy the published tables into a new SQLite file (columns, types and primary keys kept)."""
    target.unlink(missing_ok=True)
    source = duckdb.connect(str(duckdb_file), read_only=True)
    out = sqlite3.connect(target)
    try:
        for table in TABLES:
            columns = source.execute(f"DESCRIBE {table}").fetchall()
            keys = [name for name, *_, key, _default, _extra in columns if key == "PRI"]
            definitions = [f'"{name}" {_sqlite_type(kind)}' for name, kind, *_ in columns]
            if keys:
                definitions.append(f"PRIMARY KEY ({', '.join(keys)})")
            out.execute(f"CREATE TABLE {table} ({', '.join(definitions)})")
            rows = source.execute(f"SELECT * FROM {table}").fetchall()
            marks = ", ".join("?" * len(columns))
            out.executemany(f"INSERT INTO {table} VALUES ({marks})", [tuple(map(_sqlite_value, row)) for row in rows])
        for statement in INDEXES:
            out.execute(statement)
        out.commit()
        out.execute("VACUUM")
    finally:
        out.close()
        source.close()


def _sqlite_type(duckdb_type: str) -> str:
    if duckdb_type in ("INTEGER", "BIGINT", "BOOLEAN"):
        return "INTEGER"
    if duckdb_type == "DOUBLE":
        return "REAL"
    return "TEXT"


def write_metadata(path: Path) -> None:
    queries = {"lookup": {"sql": LOOKUP_SQL}, "leaderboard": {"sql": LEADERBOARD_SQL}}
    path.write_text(json.dumps({"databases": {DATABASE: {"queries": queries}}}, indent=2))


def command(database: Path, metadata: Path, port: int) -> list[str]:
    """``datasette serve -i``: immutable (no change detection, read-only), one uvicorn worker like ours."""
    return [sys.executable, "-m", "datasette", "serve", "-i", str(database), "--metadata", str(metadata),
            "--host", "127.0.0.1", "--port", str(port)]


def lookup_path(model: str, task: str) -> str:
    return f"/{DATABASE}/lookup.json?_shape=array&model={model}&task={task}"


def leaderboard_path(task: str) -> str:
    return f"/{DATABASE}/leaderboard.json?_shape=array&task={task}"


def result_path(run_id: str) -> str:
    return f"/{DATABASE}/results/{run_id}.json?_shape=array"
