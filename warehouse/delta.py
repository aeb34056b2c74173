"""Build a new version's DuckDB file from the previous version's file plus the change.

A full build reads every run's predictions Parquet file and inserts every row, so publishing one
new result cost time in proportion to the whole board (docs/benchmarks.md, "Publishing at scale").
Here the previous version's file (sound, built with today's schema: ``warehouse.repair``) is copied
beside the new version's name (a byte copy; ``copy_file_range`` lets the file system share blocks
where it can) and only what changed is applied to the copy:

- ``results`` and ``metrics``: rows of new results are inserted, rows whose status, successor,
  withdrawal or signature changed are replaced; a result's record never changes for its run id;
- the predictions tables: only new runs' Parquet files are read; the rows already copied stay;
- ``leaderboard_ranks``: only blocks whose key (task, model type, metric, sorted run ids) is new are
  inserted and only blocks no longer published are deleted;
- ``baseline_comparisons``: rows that differ are replaced;
- ``meta``, ``datasets``, ``tasks``, ``models`` (one row per spec) are rewritten;
- ``releases``: the log's records the file does not hold yet are appended.

The result holds exactly the rows a full build of the same catalog holds (tests build both and
compare every table). Where an incremental build cannot promise that (a result removed from the
catalog, a new run whose predictions file has a column or type the table lacks, a predictions table
still empty), ``apply`` says so and the caller builds the file in full. Either way the file is built
under a temporary name and renamed into place before the pointer switches (``warehouse.publish``),
so a publish killed at any step leaves the previous version served.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Callable

import duckdb
import msgspec

from medbench.layout import DataDir
from warehouse.portable import RUN_ID_FROM_FILENAME, DEFAULT_KIND_COLUMNS, relation_columns, quoted_file_list, insert_releases, table_name
from medbench.records import ResultRecord
from warehouse.releases import ReleaseRecord
from warehouse.schema import BaselineComparisonRow, LeaderboardRankRow, Row, column_names, insert_rows, select_sql

Rows = Callable[[], Sequence[Any]]


class NotIncremental(Exception):
    """The change cannot be applied to a copy with the same outcome as a full build."""


def copy_previous(previous: Path, path: Path) -> None:
    """The previous version's file, byte for byte, under the new version's temporary name."""
    shutil.copyfile(previous, path)


def _in(con: duckdb.DuckDBPyConnection, table: str, column: str, values: Sequence[str]) -> None:
    if values:
        con.execute(f"DELETE FROM {table} WHERE {column} IN (SELECT unnest(?))", [list(values)])


def replace_changed(con: duckdb.DuckDBPyConnection, row_type: type[Row], rows: Sequence[Row]) -> None:
    """Make ``row_type``'s table hold exactly ``rows``, touching only the rows that differ (compared as
    stored: a row read back as another Python value is replaced too, which only costs time)."""
    key = row_type.__key__
    names = column_names(row_type)
    at = [names.index(k) for k in key]
    old = {tuple(r[i] for i in at): tuple(r) for r in con.execute(select_sql(row_type)).fetchall()}
    new = {tuple(getattr(r, k) for k in key): r for r in rows}
    stale = [k for k, r in old.items() if k not in new or tuple(msgspec.structs.astuple(new[k])) != r]
    if stale:
        table = f"stale_{row_type.__table__}"
        con.execute(f"CREATE TEMP TABLE {table} ({', '.join(f'{k} VARCHAR' for k in key)})")
        con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(key))})", stale)
        con.execute(f"DELETE FROM {row_type.__table__} WHERE ({', '.join(key)}) IN (SELECT * FROM {table})")
        con.execute(f"DROP TABLE {table}")
    kept = old.keys() - set(stale)
    insert_rows(con, [r for k, r in new.items() if k not in kept])


def replace_specs(con: duckdb.DuckDBPyConnection, rows: dict[type[Row], Sequence[Row]]) -> None:
    """``meta``, ``datasets``, ``tasks`` and ``models``: one row per spec, the changed ones replaced."""
    for row_type, table_rows in rows.items():
        replace_changed(con, row_type, table_rows)


def _signature_text(signature: dict[str, str] | None) -> str | None:
    return msgspec.json.encode(msgspec.to_builtins(signature), order="sorted").decode() if signature else None


def changed_results(con: duckdb.DuckDBPyConnection, results: Sequence[ResultRecord], superseded: dict[str, str],
                    withdrawn: dict[str, dict[str, str]], signatures: dict[str, dict[str, str]]) -> tuple[list[str], list[str]]:
    """(run ids whose row is new or differs, run ids that are new). ``NotIncremental`` when a result of
    the previous file is no longer in the catalog."""
    old = {row[0]: row[1:] for row in con.execute(
        "SELECT run_id, superseded_by, withdrawn_reason, CAST(withdrawn_date AS VARCHAR), CAST(signature AS VARCHAR), "
        "predictions_sha256 FROM results").fetchall()}
    if len(old) > len(results) or not old.keys() <= {r.run_id for r in results}:
        raise NotIncremental("a published result left the catalog")
    changed, new = [], []
    for r in results:
        w = withdrawn.get(r.run_id)
        now = (superseded.get(r.run_id), w["reason"] if w else None, w["date"] if w else None,
               _signature_text(signatures.get(r.run_id)), r.predictions_sha256)
        before = old.get(r.run_id)
        if before is None:
            new.append(r.run_id)
            changed.append(r.run_id)
        elif before != now:
            changed.append(r.run_id)
    return changed, new


def replace_results(con: duckdb.DuckDBPyConnection, changed: Sequence[str], rows: Rows, metrics: Rows) -> None:
    """Delete then insert the rows of the changed results (``rows``/``metrics``: theirs only)."""
    _in(con, "metrics", "run_id", changed)
    _in(con, "results", "run_id", changed)
    insert_rows(con, rows())
    insert_rows(con, metrics())


def add_predictions(con: duckdb.DuckDBPyConnection, data: DataDir, new: Sequence[ResultRecord],
                    tasks: Sequence[dict[str, Any]], kind_columns: Mapping[str, Mapping[str, str]] | None = None) -> None:
    """Copy the new runs' predictions into their kind's table, ``predictions_<kind>``, by column name,
    cast as ``warehouse.portable.create_prediction_tables`` casts them. ``NotIncremental`` where a
    full build would make other tables or columns (and so another ``predictions`` view): a kind
    without its table, a table still empty (its columns came from the schemas), a file with a column
    or type the table does not have."""
    typed = {k: dict(v) for k, v in (kind_columns or DEFAULT_KIND_COLUMNS).items()}
    for t in tasks:
        typed.setdefault(t.get("kind", "choice"), {})
    held = {n for (n,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
                                      "AND starts_with(table_name, 'predictions_')").fetchall()}
    if held != {table_name(k) for k in typed}:
        raise NotIncremental("the kinds' predictions tables changed")
    kind_of = {f"{t['slug']}@{t['version']}": t.get("kind", "choice") for t in tasks}
    files: dict[str, list[str]] = {k: [] for k in typed}
    for r in new:
        path = data.predictions_path(r.run_id)
        if path.exists() and r.task in kind_of:
            files[kind_of[r.task]].append(str(path))
    for kind, declared in typed.items():
        if not files[kind]:
            continue
        table = table_name(kind)
        source = f"read_parquet([{quoted_file_list(files[kind])}], union_by_name = true, filename = true)"
        present = relation_columns(con, f"SELECT * FROM {source}")
        casts = [f"CAST({c} AS {t}) AS {c}" for c, t in declared.items() if c in present]
        select = (f"SELECT {RUN_ID_FROM_FILENAME} AS run_id, * EXCLUDE (filename)"
                  f"{f' REPLACE ({chr(44).join(casts)})' if casts else ''} FROM {source}")
        if not con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]:
            raise NotIncremental(f"{table} is empty")
        have = relation_columns(con, table)
        if any(have.get(name) != typ for name, typ in relation_columns(con, select).items()):
            raise NotIncremental(f"a new predictions file does not fit {table}'s columns")
        con.execute(f"INSERT INTO {table} BY NAME {select}")


def replace_ranks(con: duckdb.DuckDBPyConnection, ranks: Sequence[LeaderboardRankRow],
                  tasks: Sequence[str] | None = None) -> None:
    """Blocks are immutable for their key: delete the blocks gone, insert the blocks new. With
    ``tasks``, ``ranks`` are those tasks' rows only and the other tasks' blocks stay as they are."""
    key = ("task", "model_type", "metric", "results_key")
    where = " WHERE task IN (SELECT unnest(?))" if tasks is not None else ""
    old = set(con.execute(f"SELECT DISTINCT {', '.join(key)} FROM leaderboard_ranks{where}",
                          [list(tasks)] if tasks is not None else []).fetchall())
    new: dict[tuple, list[LeaderboardRankRow]] = {}
    for row in ranks:
        new.setdefault((row.task, row.model_type, row.metric, row.results_key), []).append(row)
    gone = [k for k in old if k not in new]
    if gone:
        con.execute("CREATE TEMP TABLE gone_blocks (task VARCHAR, model_type VARCHAR, metric VARCHAR, "
                    "results_key VARCHAR)")
        con.executemany("INSERT INTO gone_blocks VALUES (?, ?, ?, ?)", gone)
        con.execute(f"DELETE FROM leaderboard_ranks WHERE ({', '.join(key)}) IN (SELECT * FROM gone_blocks)")
        con.execute("DROP TABLE gone_blocks")
    insert_rows(con, [row for k, rows in new.items() if k not in old for row in rows])


def replace_baselines(con: duckdb.DuckDBPyConnection, rows: Sequence[BaselineComparisonRow],
                      run_ids: Sequence[str] | None = None) -> None:
    """The comparisons whose row differs are replaced. With ``run_ids``, ``rows`` are those results'
    comparisons only: theirs are deleted and ``rows`` inserted, the others stay."""
    if run_ids is None:
        replace_changed(con, BaselineComparisonRow, rows)
        return
    _in(con, BaselineComparisonRow.__table__, "run_id", run_ids)
    insert_rows(con, rows)


def append_releases(con: duckdb.DuckDBPyConnection, records: Sequence[ReleaseRecord]) -> None:
    """The log's records (``records``: the log, then the new one) the copied file does not hold."""
    held = {r for (r,) in con.execute("SELECT id FROM releases").fetchall()}
    insert_releases(con, [r for r in records if r.id not in held])


__all__ = ["NotIncremental", "add_predictions", "append_releases", "changed_results", "copy_previous",
           "replace_baselines", "replace_ranks", "replace_results", "replace_specs"]
