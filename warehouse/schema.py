"""The published tables, as analysts see them (documented column by column in the README).

Each table is one typed row Struct: its fields, in order, are the table's columns, and the DDL and
the INSERT statements are generated from it. So the column list is written once: the publisher
cannot insert a row with a missing, extra or misplaced column (a Struct takes exactly its fields by
keyword, and the INSERT names every column), and the reader rebuilds rows as the same Structs. Analysts rely on the names, types and order: changing a field here changes
the published schema, which means a new ``SCHEMA_VERSION`` and a README changelog entry.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar

import msgspec

from medbench.records import DatasetCard

# 1: the tables as first published (no schema_version key in meta).
# 2: meta gains the key ``schema_version``; tables and columns unchanged.
# 3: table ``leaderboard_ranks`` (rank intervals and the tie with the leader); ``metrics`` gains
#    ``method`` (how the interval was computed); new table ``baseline_comparisons``.
# 4: ``tasks`` gains ``cluster_column`` (the resampling unit of the task's intervals; NULL: items).
# 5: ``tasks`` gains ``participant_flow`` (score tasks: cases -> exclusions -> cohort -> windows -> splits);
#    ``results`` gains ``contamination_status`` (declared | possible | unlikely | unknown) and
#    ``contamination_basis`` (what decided it, in words); ``baseline_comparisons`` gains ``p_at_floor``.
#    ``leaderboard_ranks`` gains ``metric`` (a block per published metric, ranked in its direction)
#    and ``marginal_rank_low``/``marginal_rank_high``; ``rank_low``/``rank_high`` become the hull of
#    the simultaneous rank set and the marginal interval.
# 6: ``results`` gains ``status`` (current | superseded | withdrawn), ``withdrawn_reason`` and
#    ``withdrawn_date``; new table ``releases`` (the release log, ``warehouse.releases``); the
#    predictions are copied into the file as tables ``predictions_choice`` (label VARCHAR) and
#    ``predictions_score`` (label INTEGER 0/1), and the ``predictions`` view reads those tables, so
#    the file answers from any working directory after the data directory moves. ``results`` gains
#    ``signature`` (``warehouse.signing``).
# 7: ``results.signature`` covers the whole record (``warehouse.signing``: an upgraded medbench
#    re-signs every result at its next publish) and ``results.record`` no longer holds
#    ``generation_key`` (a hash of unredacted settings).
SCHEMA_VERSION = 7

# A JSON column: the value is the JSON text; DuckDB stores it as JSON.
Json = Annotated[str, msgspec.Meta(extra={"sql": "JSON"})]
TimestampTz = Annotated[dt.datetime, msgspec.Meta(extra={"sql": "TIMESTAMPTZ"})]


class Row(msgspec.Struct, frozen=True, kw_only=True):
    """A row of a published table. ``__table__`` names it; ``__key__`` is its primary key."""

    __table__: ClassVar[str]
    __key__: ClassVar[tuple[str, ...]]


class MetaRow(Row, frozen=True, kw_only=True):
    __table__ = "meta"
    __key__ = ("key",)
    key: str
    value: str


class DatasetRow(Row, DatasetCard, frozen=True, kw_only=True):
    __table__ = "datasets"
    __key__ = ("slug",)
    # slug, name, license, license_url, citation, doi, public_since: the card's columns, first
    description: str
    source: Json  # kind, location, split, revision
    snapshot_id: str | None  # content hash of the snapshot in use


class TaskRow(Row, frozen=True, kw_only=True):
    __table__ = "tasks"
    __key__ = ("ref",)
    slug: str
    version: int
    ref: str  # slug@version
    dataset: str
    kind: str  # choice | score
    title: str
    primary_metric: str
    preview: bool
    spec_hash: str
    spec: Json  # the whole decoded spec
    description: str
    # the predictions column whose values are the clusters every interval resamples (declared by the
    # task's family); NULL: each item is its own cluster, and in files built before schema 4
    cluster_column: str | None = None
    # score tasks: the participant flow of the instances as built (JSON); NULL: none, or built before schema 5
    participant_flow: Json | None = None


class ModelRow(Row, frozen=True, kw_only=True):
    __table__ = "models"
    __key__ = ("slug",)
    slug: str
    name: str
    type: str  # llm | ml | rule
    provider: str
    provider_model_id: str
    revision: str
    release_date: dt.date | None
    knowledge_cutoff: dt.date | None
    backend: str
    description: str
    spec_hash: str
    spec: Json


class ResultRow(Row, frozen=True, kw_only=True):
    """One row per run: the primary metric and the versions as columns, the whole record as JSON."""

    __table__ = "results"
    __key__ = ("run_id",)
    run_id: str
    task: str  # slug@version
    task_slug: str
    task_version: int
    dataset: str
    model_slug: str
    model_type: str
    tier: str
    demo: bool
    metric_name: str
    metric_value: float
    ci_low: float
    ci_high: float
    n: int
    parse_rate: float | None
    cost_usd: float
    eval_date: dt.date
    created_at: TimestampTz
    contamination: bool | None
    superseded_by: str | None
    dataset_snapshot: str
    task_spec_hash: str
    model_spec_hash: str
    parser: str | None
    code_revision: str
    price_table_date: dt.date
    predictions_sha256: str
    record: Json  # the full result as /v1/results/{run_id} serves it
    # declared | possible | unlikely | unknown, and what decided it in words (``contamination`` is
    # derived from the status); NULL in files built before schema 5
    contamination_status: str | None = None
    contamination_basis: str | None = None
    # current | superseded | withdrawn (schema 6; NULL in older files: read from ``superseded_by``)
    status: str | None = None
    withdrawn_reason: str | None = None  # why a maintainer withdrew the result (``medbench withdraw``)
    withdrawn_date: dt.date | None = None
    # {key_id, value, signed}: the result's Ed25519 signature (``warehouse.signing``); NULL: unsigned
    signature: Json | None = None


class MetricRow(Row, frozen=True, kw_only=True):
    __table__ = "metrics"
    __key__ = ("run_id", "name")
    run_id: str
    ordinal: int  # 0 = primary
    name: str
    value: float
    ci_low: float
    ci_high: float
    method: str | None  # wilson | bootstrap-percentile | cluster-bootstrap-percentile; NULL: not recorded


# --- baseline comparisons (schema 3): each result against its task's baseline model ----------------


class BaselineComparisonRow(Row, frozen=True, kw_only=True):
    """Computed at publish time from two runs' predictions (so in neither result.json nor run id)."""

    __table__ = "baseline_comparisons"
    __key__ = ("run_id", "baseline_run_id")
    run_id: str
    baseline_run_id: str
    baseline_model: str
    metric: str
    difference: float  # run's metric minus the baseline's, on the same test items
    ci_low: float
    ci_high: float
    p_value: float
    method: str
    replicates: int
    seed: int
    dropped_replicates: int
    # p is the bootstrap's floor 2/(R+1) over the R kept replicates (so p <= p_value); NULL in files
    # built before schema 5
    p_at_floor: bool | None = None


BASELINE_TABLES: tuple[type[Row], ...] = (BaselineComparisonRow,)


TABLES: tuple[type[Row], ...] = (MetaRow, DatasetRow, TaskRow, ModelRow, ResultRow, MetricRow, *BASELINE_TABLES)


# --- rank intervals (schema 3): one block of rows per leaderboard (all models, and each model type)
class LeaderboardRankRow(Row, frozen=True, kw_only=True):
    """A current result's place on one leaderboard (one per metric), with its 95% rank set from the joint bootstrap."""

    __table__ = "leaderboard_ranks"
    __key__ = ("task", "model_type", "metric", "run_id")
    task: str  # slug@version
    model_type: str  # '' = the leaderboard of all models, else that type's leaderboard
    metric: str  # the metric ranked by, in its direction (the primary is the default leaderboard)
    run_id: str
    rank: int  # point rank: value in the metric's direction, then eval_date, then run_id
    rank_low: int  # hull of the simultaneous 95% rank set and the marginal interval
    rank_high: int
    marginal_rank_low: int  # percentile interval of the replicate ranks (not valid at ties)
    marginal_rank_high: int
    tied_with_leader: bool  # the simultaneous set contains rank 1
    leader_run_id: str
    diff_low: float | None  # paired 95% interval of (this result - the leader); null for point ranks
    diff_high: float | None
    method: str
    replicates: int
    dropped_replicates: int
    seed: int
    n_items: int  # items (or windows) present in every result of the block
    results_key: str  # sha256 of the block's sorted run ids: unchanged key, rows reused


TABLES = (*TABLES, LeaderboardRankRow)


class ReleaseRow(Row, frozen=True, kw_only=True):
    """One release of the append-only release log (schema 6), mirrored into every version built after it."""

    __table__ = "releases"
    __key__ = ("id",)
    id: str  # the warehouse version it was published as
    published_at: TimestampTz
    n_results: int
    tasks: Json  # ["slug@version", ...]
    manifest_sha256: str
    previous: str | None
    manifest: Json  # every result with its predictions_sha256 and status, each task's leaderboard rows
    signature: Json | None = None  # {key_id, value, signed}; NULL: published without a signing key


TABLES = (*TABLES, ReleaseRow)

_SQL_TYPES: dict[type, str] = {
    msgspec.inspect.StrType: "VARCHAR",
    msgspec.inspect.IntType: "INTEGER",
    msgspec.inspect.FloatType: "DOUBLE",
    msgspec.inspect.BoolType: "BOOLEAN",
    msgspec.inspect.DateType: "DATE",
    msgspec.inspect.DateTimeType: "TIMESTAMP",
}


def _sql_type(t: msgspec.inspect.Type) -> str:
    if isinstance(t, msgspec.inspect.UnionType):  # ``X | None``: nullable, and every column is
        (t,) = [u for u in t.types if not isinstance(u, msgspec.inspect.NoneType)]
    if isinstance(t, msgspec.inspect.Metadata):
        return (t.extra or {}).get("sql") or _sql_type(t.type)
    return _SQL_TYPES[type(t)]


def columns(row_type: type[Row]) -> list[tuple[str, str]]:
    """(name, SQL type) of each column, in table order."""
    info = msgspec.inspect.type_info(row_type)
    assert isinstance(info, msgspec.inspect.StructType)
    return [(f.name, _sql_type(f.type)) for f in info.fields]


def column_names(row_type: type[Row]) -> list[str]:
    return [f.name for f in msgspec.structs.fields(row_type)]


def create_table(row_type: type[Row]) -> str:
    """``CREATE TABLE``: a single-column key inline (as first published), a compound one at the end."""
    key = row_type.__key__
    parts = [f"{name} {sql}" + (" PRIMARY KEY" if key == (name,) else "") for name, sql in columns(row_type)]
    if len(key) > 1:
        parts.append(f"PRIMARY KEY ({', '.join(key)})")
    return f"CREATE TABLE {row_type.__table__} ({', '.join(parts)})"


CREATE_TABLES = [create_table(t) for t in TABLES]


INSERT_BATCH = 256


def insert_rows(con: Any, rows: Sequence[Row]) -> None:
    """Insert rows of one table (``con`` is a DuckDB connection; the statement names every column).

    ``INSERT_BATCH`` rows per statement, one ``VALUES`` tuple each: DuckDB's ``executemany`` runs one
    statement per row, which cost about 4 ms a row, so a publish inserting a block's rank rows or a
    seeded board's results was dominated by it (docs/benchmarks.md, "Publishing at scale")."""
    if not rows:
        return
    row_type = type(rows[0])
    names = column_names(row_type)
    one = f"({', '.join(['?'] * len(names))})"
    into = f"INSERT INTO {row_type.__table__} ({', '.join(names)}) VALUES "
    for start in range(0, len(rows), INSERT_BATCH):
        batch = rows[start:start + INSERT_BATCH]
        con.execute(into + ", ".join([one] * len(batch)),
                    [value for r in batch for value in msgspec.structs.astuple(r)])


def select_sql(row_type: type[Row], order_by: str = "") -> str:
    """``SELECT`` of every column of ``row_type``'s table, in field order (to rebuild the Structs)."""
    sql = f"SELECT {', '.join(column_names(row_type))} FROM {row_type.__table__}"
    return sql + (f" ORDER BY {order_by}" if order_by else "")


# The ``predictions`` view's own column; the others are the published Parquet files' (by name).
PREDICTIONS_RUN_COLUMN = ("run_id", "VARCHAR")
