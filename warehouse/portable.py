"""What makes a published DuckDB file portable: the predictions and the release log inside it.

Before schema 6 the ``predictions`` view read the runs' Parquet files by absolute path, so the file
broke once the data directory moved or was copied (and DuckDB resolves relative paths against the
working directory, so relative ones would break from another cwd). Now the predictions are copied
into the file at publish time, one table per task kind, ``predictions_<kind>``, typed by the kind
(``Kind.sql_types``, handed in as ``Catalog.kind_columns``):

- ``predictions_choice``: choice tasks (clinicalqa), ``label`` VARCHAR (the letter);
- ``predictions_score``: score tasks (vitaldb-ioh), ``label`` INTEGER 0/1, so ``avg(label)`` works;
- any other kind's (a plug-in's regression kind: ``predictions_regression``) with its own columns;
- a kind that stores lists per item (``Kind.sql_unnest``, handed in as ``Catalog.kind_unnest``) has them
  unnested, one row per list entry, the item's other columns repeated on each: ``predictions_rubric``
  is one row per (criterion, judge sample) with the item's answer text on every row;

and ``predictions`` stays, as a view over all of them (a column two kinds type differently, such as
``label``, as text, as it always was).
The cost (file size, publish time) is measured by ``bench/publish_scale``. The ``releases`` table
mirrors the release log (``warehouse.releases``) as it stood when the version was built.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import msgspec

from medbench.layout import DataDir
from medbench.records import ResultRecord
from warehouse.releases import ReleaseRecord
from warehouse.schema import PREDICTIONS_RUN_COLUMN, ReleaseRow, insert_rows

# Parquet (pyarrow) type names -> DuckDB types, for empty tables; anything else is VARCHAR.
_ARROW_SQL = {"string": "VARCHAR", "large_string": "VARCHAR", "bool": "BOOLEAN", "double": "DOUBLE", "float": "FLOAT",
              "int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT"}

# The built-in kinds' typed columns, for a catalog that hands in none (``Catalog.kind_columns``: the
# pipeline hands in every registered kind's ``Kind.sql_types``). Pinned: choice's ``label`` is the
# letter, score's an integer 0/1 (so ``avg(label)`` works).
DEFAULT_KIND_COLUMNS: dict[str, dict[str, str]] = {"choice": {"label": "VARCHAR"}, "score": {"label": "INTEGER"}}
PREDICTION_TABLES = {k: (f"predictions_{k}", cols["label"]) for k, cols in DEFAULT_KIND_COLUMNS.items()}
RUN_ID_FROM_FILENAME = r"regexp_extract(filename, '([0-9a-f]{12})/predictions\.parquet$', 1)"
_KIND_NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
_LIST_OF = re.compile(r"^(?:large_)?list<(?:item|element): (\w+)>$")


def empty_view_columns(schemas: Sequence[Any]) -> list[tuple[str, str]]:
    """``run_id`` and every column of the given predictions schemas, each name once (the first type
    wins), in order: what ``read_parquet(..., union_by_name = true)`` gives once files exist."""
    cols = dict([PREDICTIONS_RUN_COLUMN, ("instance_id", "VARCHAR")])
    for schema in schemas:
        for f in schema:
            cols.setdefault(f.name, _ARROW_SQL.get(str(f.type), "VARCHAR"))
    return list(cols.items())


def quoted_file_list(files: Sequence[str]) -> str:
    return ", ".join("'" + f.replace("'", "''") + "'" for f in sorted(files))


def table_name(kind: str) -> str:
    """``predictions_<kind>``; a kind name that is no SQL identifier is refused (it names a table)."""
    if not _KIND_NAME.match(kind):
        raise ValueError(f"task kind {kind!r} cannot name a DuckDB table: use lowercase letters, digits and _")
    return f"predictions_{kind}"


def relation_columns(con: duckdb.DuckDBPyConnection, relation: str) -> dict[str, str]:
    return {name: typ for name, typ, *_ in con.execute(f"DESCRIBE {relation}").fetchall()}


def create_prediction_tables(con: duckdb.DuckDBPyConnection, data: DataDir, results: Sequence[ResultRecord],
                             tasks: Sequence[dict[str, Any]], schemas: Sequence[Any],
                             kind_columns: Mapping[str, Mapping[str, str]] | None = None,
                             kind_unnest: Mapping[str, Sequence[str]] | None = None) -> None:
    """Copy every published run's predictions into one table per kind, ``predictions_<kind>``, and make
    ``predictions`` a view over all of them (docs/duckdb.md).

    A table's columns are its files' own, by name; the kind's typed columns (``kind_columns``: the
    kind's ``sql_types``) are cast to their declared type where the files hold them, and no column is
    assumed to exist. Every kind of ``kind_columns`` gets a table (empty, typed from its tasks' schemas,
    when it has no file), and so does every kind a task names. The view is ``UNION ALL BY NAME`` of the
    tables; a column two kinds type differently (choice's text ``label``, score's integer one) is
    text in the view."""
    typed = {k: dict(v) for k, v in (kind_columns or DEFAULT_KIND_COLUMNS).items()}
    for t in tasks:
        typed.setdefault(t.get("kind", "choice"), {})
    kind_of = {f"{t['slug']}@{t['version']}": t.get("kind", "choice") for t in tasks}
    unnest = {k: tuple(v) for k, v in (kind_unnest or {}).items()}
    schemas_of: dict[str, list[Any]] = {}
    for t, schema in zip(tasks, schemas):
        schemas_of.setdefault(t.get("kind", "choice"), []).append(schema)
    files: dict[str, list[str]] = {k: [] for k in typed}
    for r in results:
        path = data.predictions_path(r.run_id)
        if path.exists() and r.task in kind_of:
            files[kind_of[r.task]].append(str(path))
    tables: list[str] = []
    for kind, declared in typed.items():
        table = table_name(kind)
        tables.append(table)
        if files[kind]:
            source = f"read_parquet([{quoted_file_list(files[kind])}], union_by_name = true, filename = true)"
            present = relation_columns(con, f"SELECT * FROM {source}")
            casts = [f"CAST({c} AS {t}) AS {c}" for c, t in declared.items() if c in present]
            casts += [f"unnest({c}) AS {c}" for c in unnest.get(kind, ()) if c in present and c not in declared]
            replace = f" REPLACE ({', '.join(casts)})" if casts else ""
            con.execute(f"CREATE TABLE {table} AS SELECT {RUN_ID_FROM_FILENAME} AS run_id, * EXCLUDE (filename){replace} "
                        f"FROM {source}")
        else:
            cols = dict(empty_view_columns(schemas_of.get(kind, [])))
            for schema in schemas_of.get(kind, []):
                for f in schema:
                    m = _LIST_OF.match(str(f.type))
                    if f.name in unnest.get(kind, ()) and m:
                        cols[f.name] = _ARROW_SQL.get(m.group(1), "VARCHAR")
            cols.update(declared)  # the kind's typed columns are there even before any file
            con.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {t}' for n, t in cols.items())})")
    # A kind whose table unnests per-grade lists (one row per grade) joins the view with one row per
    # item: its per-grade columns stay in its own table, so the view keeps one row per (run, instance).
    per_grade = {table_name(kind): unnest.get(kind, ()) for kind in typed}
    columns = {table: relation_columns(con, table) for table in tables}
    shapes = {table: {c: t for c, t in columns[table].items() if c not in per_grade.get(table, ())}
              for table in tables}
    types: dict[str, set[str]] = {}
    for cols in shapes.values():
        for name, typ in cols.items():
            types.setdefault(name, set()).add(typ)
    mixed = {name for name, seen in types.items() if len(seen) > 1}
    selects = []
    for table, cols in shapes.items():
        casts = [f"CAST({c} AS VARCHAR) AS {c}" for c in cols if c in mixed and cols[c] != "VARCHAR"]
        dropped = [c for c in per_grade.get(table, ()) if c in columns[table]]
        if dropped:
            selects.append(f"SELECT DISTINCT ON (run_id, instance_id) * EXCLUDE ({', '.join(dropped)})"
                           f"{f' REPLACE ({chr(44).join(casts)})' if casts else ''} FROM {table}")
        else:
            selects.append(f"SELECT *{f' REPLACE ({chr(44).join(casts)})' if casts else ''} FROM {table}")
    con.execute("CREATE VIEW predictions AS " + " UNION ALL BY NAME ".join(selects))


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


__all__ = ["DEFAULT_KIND_COLUMNS", "PREDICTION_TABLES", "create_prediction_tables", "table_name", "empty_view_columns", "insert_releases", "release_rows"]
