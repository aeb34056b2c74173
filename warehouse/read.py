"""Typed reads of the published warehouse: the API and the CLI load through here, never their own SQL.

A reader resolves the ``CURRENT`` pointer once (``warehouse.versions``: a damaged pointer or
version file falls back to the newest sound kept version) and opens that version's immutable file read-only,
so it keeps a consistent view whatever is published meanwhile, and closes it before returning:
DuckDB caches an open database per path, so a process that held the file open would keep seeing
it. Callers get ``warehouse.schema`` rows and ``ResultRecord``s, and name what they want
(``read_version``, ``current_result``, ...): the SQL lives here, next to the schema it depends on,
and no caller-supplied text ever reaches DuckDB.

Files built by older medbench versions are read too: the tables have not changed since schema
version 1 except for the added ``leaderboard_ranks`` (3; absent before, read as no rows), and a
missing ``meta.schema_version`` means 1.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

import duckdb
import msgspec

from medbench.layout import DataDir, where
from medbench.records import ResultRecord, decode_record
from warehouse.schema import (BaselineComparisonRow, DatasetRow, LeaderboardRankRow, MetricRow, ModelRow, Row,
                              TaskRow, column_names, select_sql)
from warehouse.versions import PointerError, choose, read_pointer

log = logging.getLogger(__name__)

R = TypeVar("R", bound=Row)


class NoWarehouse(RuntimeError):
    """Nothing has been published in this data directory yet."""


# What reading a version can raise when the file is gone (pruned after the pointer was read) or
# damaged: a reader that polls the pointer logs these and keeps what it had.
# (``PointerError``, a damaged pointer, is a ValueError.)
READ_ERRORS: tuple[type[BaseException], ...] = (duckdb.Error, OSError, msgspec.DecodeError, ValueError, PointerError)


def current_version(data: DataDir) -> str | None:
    """The version the pointer names, or None before the first publish; ``PointerError`` (a
    ``ValueError``) when the pointer is damaged (``warehouse.versions``)."""
    return read_pointer(data)


def _require_version(data: DataDir) -> str:
    """The version to read: the pointer's, or the newest sound kept one when the pointer or its file
    is damaged (with a warning); NoWarehouse, naming the cause, when there is none."""
    chosen = choose(data)
    if chosen.version is None:
        if chosen.cause:
            raise NoWarehouse(f"the published warehouse in {data.root} cannot be read: {chosen.cause}")
        raise NoWarehouse(f"no published warehouse {where(data.root)}; publish one there with "
                          "`medbench materialize` (or `medbench demo` for the demo data)")
    if chosen.fallback:
        log.warning("%s; reading the newest sound kept version %s instead", chosen.cause, chosen.version)
    return chosen.version


def _connect(data: DataDir, version: str) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(data.version_file(version)), read_only=True)


@dataclass
class Snapshot:
    """A raw read-only connection to one version, for analysts' scripts and tests (medbench's own
    code reads through the typed functions below)."""

    version: str
    con: duckdb.DuckDBPyConnection

    def close(self) -> None:
        self.con.close()


def open_current(data: DataDir | None = None) -> Snapshot:
    data = data or DataDir()
    version = _require_version(data)
    return Snapshot(version=version, con=_connect(data, version))


@dataclass(frozen=True, slots=True)
class Published:
    """One published result: its record and the newer run that replaced it, if any."""

    record: ResultRecord
    superseded_by: str | None
    # {reason, date} when a maintainer withdrew it (schema 6; ``warehouse.withdrawals``), else None
    withdrawn: Mapping[str, str] | None = None
    # {key_id, value, signed} (``warehouse.signing``; schema 6), None when published unsigned
    signature: Mapping[str, str] | None = None

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def status(self) -> str:
        """current | superseded | withdrawn (docs/api.md, "Releases, withdrawals and supersession")."""
        return "withdrawn" if self.withdrawn else "superseded" if self.superseded_by else "current"


def _rows(con: duckdb.DuckDBPyConnection, row_type: type[R], order_by: str) -> tuple[R, ...]:
    """Rows of ``row_type``'s table as Structs, values as DuckDB returns them (NULL stays None).

    A column added by a later schema (e.g. ``tasks.cluster_column``, schema 4) reads as its
    default in a file built before it, so every kept version stays readable."""
    names = column_names(row_type)
    present = {r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [row_type.__table__]).fetchall()}
    if all(n in present for n in names):
        sql = select_sql(row_type, order_by)
    else:
        listed = [n if n in present else f"NULL AS {n}" for n in names]
        sql = f"SELECT {', '.join(listed)} FROM {row_type.__table__}" + (f" ORDER BY {order_by}" if order_by else "")
    return tuple(row_type(**dict(zip(names, row))) for row in con.execute(sql).fetchall())


def _meta(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return dict(con.execute("SELECT key, value FROM meta").fetchall())


def _published(rows: Sequence[tuple[Any, ...]]) -> tuple[Published, ...]:
    return tuple(Published(decode_record(row[0]), row[1], _withdrawal(*row[2:4]), _signature(row[4:]))
                 for row in rows)


def _signature(column: Sequence[Any]) -> Mapping[str, str] | None:
    if not column or column[0] is None:
        return None
    return MappingProxyType(msgspec.json.decode(column[0]))


def _withdrawal(reason: str | None = None, date: Any = None) -> Mapping[str, str] | None:
    return MappingProxyType({"reason": reason, "date": str(date)}) if reason is not None else None


_RESULTS = "SELECT record, superseded_by, withdrawn_reason, withdrawn_date FROM results"
_RESULTS_BEFORE_6 = "SELECT record, superseded_by FROM results"
_RESULTS_SIGNED = "SELECT record, superseded_by, withdrawn_reason, withdrawn_date, signature FROM results"


def _results_sql(con: duckdb.DuckDBPyConnection) -> str:
    """The results query for this file (one built before schema 6 has no withdrawals; one built by
    an earlier schema 6 publisher, no signatures)."""
    present = {r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'results' "
        "AND column_name IN ('withdrawn_reason', 'signature')").fetchall()}
    if "withdrawn_reason" not in present:
        return _RESULTS_BEFORE_6
    return _RESULTS_SIGNED if "signature" in present else _RESULTS


def _not_withdrawn(con: duckdb.DuckDBPyConnection) -> str:
    """A condition leaving withdrawn results out (none in a file built before schema 6)."""
    return " AND coalesce(status, '') <> 'withdrawn'" if _results_sql(con) != _RESULTS_BEFORE_6 else ""


@dataclass(frozen=True)
class Catalogue:
    """Everything one published version holds that the service serves: meta, datasets (by slug),
    tasks (by slug, version), models (by slug) and every result (by run_id)."""

    version: str
    meta: Mapping[str, str]
    datasets: tuple[DatasetRow, ...]
    tasks: tuple[TaskRow, ...]
    models: tuple[ModelRow, ...]
    results: tuple[Published, ...]
    ranks: tuple[LeaderboardRankRow, ...] = ()  # empty in files from before schema 3
    # each result against its task's baseline (schema 3; empty in older files)
    baseline_comparisons: tuple[BaselineComparisonRow, ...] = ()

    @property
    def schema_version(self) -> int:
        return schema_version_of(self.meta)

    @property
    def demo(self) -> bool:
        return self.meta.get("demo") == "true"

    @classmethod
    def open(cls, data: DataDir | None = None) -> Catalogue:
        """The current version. Raises NoWarehouse when nothing is published yet."""
        data = data or DataDir()
        return read_version(data, _require_version(data))


def schema_version_of(meta: Mapping[str, str]) -> int:
    """The table schema a version was built with: 1 for files from before the key existed."""
    try:
        return int(meta.get("schema_version", "1"))
    except ValueError:
        return 0


def read_version(data: DataDir, version: str) -> Catalogue:
    """Read one published version completely (read-only; the connection is closed on return)."""
    con = _connect(data, version)
    try:
        meta = _meta(con)
        datasets = _rows(con, DatasetRow, "slug")
        tasks = _rows(con, TaskRow, "slug, version")
        models = _rows(con, ModelRow, "slug")
        results = _published(con.execute(f"{_results_sql(con)} ORDER BY run_id").fetchall())
        ranks = _ranks(con)
        baselines = _optional_rows(con, BaselineComparisonRow, "run_id")
    finally:
        con.close()
    return Catalogue(version=version, meta=MappingProxyType(meta), datasets=datasets, tasks=tasks, models=models,
                     results=results, ranks=ranks, baseline_comparisons=baselines)


def _optional_rows(con: duckdb.DuckDBPyConnection, row: type, order: str) -> tuple:
    """A table's rows, or none in a file built before the table existed (schema < 3)."""
    found = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [row.__table__])
    if not found.fetchone()[0]:
        return ()
    return _rows(con, row, order)


def _ranks(con: duckdb.DuckDBPyConnection) -> tuple[LeaderboardRankRow, ...]:
    """The rank-interval rows (none in a file from before schema 3, nor from before schema 5, whose
    rows have no ``metric``: the rows are recomputed at the next publish, and until then served as points)."""
    found = con.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = ? AND column_name = ?",
                        [LeaderboardRankRow.__table__, "metric"])
    if not found.fetchone()[0]:
        return ()
    return _optional_rows(con, LeaderboardRankRow, "task, model_type, metric, rank")


def read_ranks(data: DataDir) -> tuple[LeaderboardRankRow, ...]:
    """The current version's rank rows (none before the first publish, or from an older schema), for reuse."""
    try:
        version = _require_version(data)
    except NoWarehouse:
        return ()
    con = _connect(data, version)
    try:
        return _ranks(con)
    finally:
        con.close()


def read_meta(data: DataDir, version: str) -> dict[str, str]:
    """The ``meta`` table of one version (what publishing compares before building a new one)."""
    con = _connect(data, version)
    try:
        return _meta(con)
    finally:
        con.close()


def published_records(data: DataDir, version: str) -> dict[str, str]:
    """run_id -> the result record (its JSON, as published) of one version: what a publisher compares
    with the result.json files to decide whether the version still holds every finished result."""
    con = _connect(data, version)
    try:
        return dict(con.execute("SELECT run_id, record FROM results").fetchall())
    finally:
        con.close()


def read_metrics(data: DataDir, version: str, run_id: str) -> tuple[MetricRow, ...]:
    """Every metric of one run, the primary first."""
    con = _connect(data, version)
    try:
        names = column_names(MetricRow)
        rows = con.execute(f"{select_sql(MetricRow)} WHERE run_id = ? ORDER BY ordinal", [run_id]).fetchall()
    finally:
        con.close()
    return tuple(MetricRow(**dict(zip(names, row))) for row in rows)


def _current_one(data: DataDir, sql: str, params: list[Any]) -> Published | None:
    con = _connect(data, _require_version(data))
    try:
        row = con.execute(_results_sql(con) + sql.replace("{not_withdrawn}", _not_withdrawn(con)), params).fetchone()
    finally:
        con.close()
    return _published([row])[0] if row else None


def result_by_id(data: DataDir, run_id: str) -> Published | None:
    """The current version's result ``run_id``, or None. Raises NoWarehouse before the first publish."""
    return _current_one(data, " WHERE run_id = ?", [run_id])


def current_result(data: DataDir, model_slug: str, task_ref: str) -> Published | None:
    """The result lookup answers for (model, task version): the newest one neither superseded nor
    withdrawn (the newest of all if every one is superseded), or None. Raises NoWarehouse before the
    first publish."""
    return _current_one(
        data,
        " WHERE model_slug = ? AND task = ?{not_withdrawn} "
        "ORDER BY superseded_by IS NULL DESC, created_at DESC, run_id DESC LIMIT 1",
        [model_slug, task_ref],
    )


class LeaderboardLine(msgspec.Struct, frozen=True):
    """One current (not superseded) result as the plain-text leaderboards print it."""

    task: str
    model_slug: str
    metric_name: str
    metric_value: float
    ci_low: float
    ci_high: float
    n: int
    parse_rate: float | None
    run_id: str
    demo: bool
    # a rubric task's judge (slug) and its agreement with itself (``judge_agreement``); None otherwise
    judge: str | None = None
    judge_agreement: float | None = None


# read from the result's record and metrics, not a column of ``results``
_LINE_EXPRESSIONS = {
    "judge": "json_extract_string(record, '$.judge.model') AS judge",
    "judge_agreement": "(SELECT m.value FROM metrics m WHERE m.run_id = results.run_id "
                       "AND m.name = 'judge_agreement') AS judge_agreement",
}


# The primary metric in its direction, as SQL over the ``results`` table: the number that sorts
# ascending exactly as ``medbench.records.metric_order_value`` does (higher: -value; lower: value;
# target: distance to the target; NaN last). docs/duckdb.md shows it in a query.
PRIMARY_ORDER_SQL = (
    "CASE coalesce(record->'metrics'->0->>'direction', 'higher') WHEN 'lower' THEN metric_value "
    "WHEN 'target' THEN abs(metric_value - coalesce(CAST(record->'metrics'->0->>'target' AS DOUBLE), 0)) "
    "ELSE -metric_value END"
)


def leaderboard_lines(data: DataDir) -> list[LeaderboardLine]:
    """Current results of the current version, by task, then the primary metric in its direction
    (``PRIMARY_ORDER_SQL``), eval_date, run_id: the order of ``/v1/leaderboard``."""
    names = ", ".join(_LINE_EXPRESSIONS.get(f.name, f.name) for f in msgspec.structs.fields(LeaderboardLine))
    con = _connect(data, _require_version(data))
    try:
        rows = con.execute(
            f"SELECT {names} FROM results WHERE superseded_by IS NULL{_not_withdrawn(con)} "
            f"ORDER BY task, {PRIMARY_ORDER_SQL}, eval_date, run_id"
        ).fetchall()
    finally:
        con.close()
    return [LeaderboardLine(*row) for row in rows]


__all__ = [
    "PRIMARY_ORDER_SQL", "READ_ERRORS", "Catalogue", "LeaderboardLine", "NoWarehouse", "Published", "Snapshot", "current_result", "current_version",
    "leaderboard_lines", "open_current", "published_records", "read_meta", "read_metrics", "read_version", "result_by_id",
    "schema_version_of",
]
