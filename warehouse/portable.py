"""What makes a published DuckDB file portable: the predictions and the release log inside it.

Before schema 6 the ``predictions`` view read the runs' Parquet files by absolute path, so the file
broke once the data directory moved or was copied (and DuckDB resolves relative paths against the
working directory, so relative ones would break from another cwd). Now the predictions are copied
into the file at publish time, one table per task kind with a typed ``label``:

- ``predictions_choice``: choice tasks (clinicalqa), ``label`` VARCHAR (the letter);
- ``predictions_score``: score tasks (vitaldb-ioh), ``label`` INTEGER 0/1, so ``avg(label)`` works;

and ``predictions`` stays, as a view over those two tables (``label`` as text, as it always was).
The cost (file size, publish time) is measured by ``bench/publish_scale``. The ``releases`` table
mirrors the release log (``warehouse.releases``) as it stood when the version was built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import msgspec

from warehouse.layout import DataDir
from warehouse.records import ResultRecord
from warehouse.releases import ReleaseRecord
from warehouse.schema import PREDICTIONS_RUN_COLUMN, ReleaseRow, insert_rows

# Parquet (pyarrow) type names -> DuckDB types, for empty tables; anything else is VARCHAR.
_ARROW_SQL = {"string": "VARCHAR", "large_string": "VARCHAR", "bool": "BOOLEAN", "double": "DOUBLE", "float": "FLOAT",
              "int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT"}

PREDICTION_TABLES = {"choice": ("predictions_choice", "VARCHAR"), "score": ("predictions_score", "INTEGER")}
_RUN_ID = r"regexp_extract(filename, '([0-9a-f]{12})/predictions\.parquet$', 1)"


def empty_view_columns(schemas: Sequence[Any]) -> list[tuple[str, str]]:
    """``run_id`` and every column of the given predictions schemas, each name once (the first type
    wins), in order: what ``read_parquet(..., union_by_name = true)`` gives once files exist."""
    cols = dict([PREDICTIONS_RUN_COLUMN, ("instance_id", "VARCHAR")])
    for schema in schemas:
        for f in schema:
            cols.setdefault(f.name, _ARROW_SQL.get(str(f.type), "VARCHAR"))
    return list(cols.items())


def _quoted(files: Sequence[str]) -> str:
    return ", ".join("'" + f.replace("'", "''") + "'" for f in sorted(files))


def create_prediction_tables(con: duckdb.DuckDBPyConnection, data: DataDir, results: Sequence[ResultRecord],
                             tasks: Sequence[dict[str, Any]], schemas: Sequence[Any]) -> None:
    """Copy every published run's predictions into ``predictions_choice`` / ``predictions_score`` (by
    the task's kind; a kind other than score is filed with choice), and make ``predictions`` a view
    over both. Columns are the files' own, by name; only ``label`` is typed here."""
    kind_of = {f"{t['slug']}@{t['version']}": t.get("kind", "choice") for t in tasks}
    schemas_of: dict[str, list[Any]] = {}
    for t, schema in zip(tasks, schemas):
        schemas_of.setdefault("score" if t.get("kind") == "score" else "choice", []).append(schema)
    files: dict[str, list[str]] = {"choice": [], "score": []}
    for r in results:
        path = data.predictions_path(r.run_id)
        if path.exists():
            files["score" if kind_of.get(r.task) == "score" else "choice"].append(str(path))
    for kind, (table, label_type) in PREDICTION_TABLES.items():
        if files[kind]:
            con.execute(
                f"CREATE TABLE {table} AS SELECT {_RUN_ID} AS run_id, * EXCLUDE (filename) "
                f"REPLACE (CAST(label AS {label_type}) AS label) "
                f"FROM read_parquet([{_quoted(files[kind])}], union_by_name = true, filename = true)")
        else:
            cols = dict(empty_view_columns(schemas_of.get(kind, [])))
            cols["label"] = label_type
            con.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {t}' for n, t in cols.items())})")
    con.execute("CREATE VIEW predictions AS SELECT * FROM predictions_choice UNION ALL BY NAME "
                "SELECT * REPLACE (CAST(label AS VARCHAR) AS label) FROM predictions_score")


def release_rows(records: Sequence[ReleaseRecord]) -> list[ReleaseRow]:
    def enc(value: Any) -> str:
        return msgspec.json.encode(value, order="sorted").decode()

    return [ReleaseRow(id=r.id, published_at=_when(r.published_at), n_results=r.n_results, tasks=enc(r.tasks),
                       manifest_sha256=r.manifest_sha256, previous=r.previous, manifest=enc(r.manifest),
                       signature=enc(r.signature) if r.signature is not None else None)
            for r in records]


def _when(text: str) -> Any:
    import datetime as dt

    return dt.datetime.fromisoformat(text)


def insert_releases(con: duckdb.DuckDBPyConnection, records: Sequence[ReleaseRecord]) -> None:
    insert_rows(con, release_rows(records))


__all__ = ["PREDICTION_TABLES", "create_prediction_tables", "empty_view_columns", "insert_releases", "release_rows"]
