"""The ``Kind`` protocol: everything the engine, the API and the site know about a warehouse kind.

A task family maps onto one kind (built in: ``choice``, a letter per item, accuracy; ``score``, a
number per item, AUROC). The kind, not the caller, decides the predictions' own columns, how two or more
results are paired, the paired test and its interval, the difference to a reference model, the rank
intervals, its DuckDB table's types, its figures, its official answers and its words on the site;
so the engine, the warehouse, ``/v1/compare`` and the site hold no ``if kind == ...`` branch, and a
kind is a plug-in: built in (``medbench/kinds/``) or from an installed distribution's
``medbench.kinds`` entry point (docs/adding-a-task.md, "A new kind"). The strategies live in ``medbench.kinds``; this module holds what they share and hand
back, and imports nothing of the project (the API may import it).

Resampling unit: a family declares its cluster column (``cluster_column``; the warehouse's ``tasks``
table records it). A kind that resamples draws the sorted unique values of that column with
replacement, each with all its items, for every result at once; without one, each item is its own
cluster. The unit's name in method texts is the column's (``resampling_unit``), so nothing here or
in the API names a dataset's column.

Its file name is shared on purpose: the core's declaration (no I/O); the module of the same name
elsewhere reads, fills or implements it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

Columns = dict[str, np.ndarray]  # one result's columns on the aligned items


class ComparisonError(ValueError):
    """The results cannot be compared (no shared items, labels that disagree, one class only)."""


@dataclass(frozen=True)
class Comparison:
    """A paired comparison of result A with result B on their shared items (``/v1/compare``)."""

    metric: str
    n_shared: int
    value_a: float  # the metric of A on the shared items
    value_b: float
    difference: float  # value_a - value_b
    ci_low: float
    ci_high: float
    p_value: float
    method: str
    replicates: int
    seed: int
    dropped_replicates: int
    a_only_correct: int | None  # accuracy kinds: discordant pairs A right / B wrong
    b_only_correct: int | None  # ... and A wrong / B right
    p_at_floor: bool = False  # p is its procedure's smallest reportable value (a bootstrap's 2/(R+1)): p <= it


@dataclass(frozen=True)
class BaselineDifference:
    """A result minus its task's reference model, as one row of the ``baseline_comparisons`` table holds it."""

    metric: str
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    method: str
    dropped_replicates: int
    p_at_floor: bool = False  # as in Comparison


@dataclass(frozen=True)
class RankBlock:
    """One leaderboard block's rank intervals (``medbench.stats.ranks.RankIntervals``), how many
    aligned items they used, and the method text the ``leaderboard_ranks`` table records."""

    intervals: Any
    n_items: int
    method: str


def align(tables: Sequence[pa.Table], columns: Sequence[str]) -> list[Columns]:
    """Each table's ``columns`` on the instance ids present in all of them, in sorted id order.

    The one alignment of results (a comparison, a difference to the reference model, a leaderboard block): the
    answer does not depend on how any file is ordered, and an item missing from one result leaves
    all of them.
    """
    ids = [t.column("instance_id").to_numpy().astype(str) for t in tables]
    shared = ids[0]
    for i in ids[1:]:
        shared = np.intersect1d(shared, i)
    shared = np.unique(shared)
    out = []
    for t, i in zip(tables, ids):
        order = np.argsort(i, kind="stable")
        pick = order[np.searchsorted(i[order], shared)]
        out.append({name: t.column(name).to_numpy(zero_copy_only=False)[pick] for name in columns})
    return out


def read_aligned(paths: Sequence[Path | str], columns: Sequence[str]) -> tuple[list[Columns], list[int]]:
    """``align`` over predictions files, with each file's row count (to tell "all items shared")."""
    tables = [pq.read_table(p, columns=["instance_id", *columns]) for p in paths]
    return align(tables, columns), [t.num_rows for t in tables]


def resampling_unit(cluster_column: str | None) -> str:
    """The unit's name in method texts: the cluster column's, an ``id`` suffix dropped, pluralised
    (a column ``patient_id`` gives "patients"); "items" without one."""
    if not cluster_column:
        return "items"
    stem = cluster_column.removesuffix("_id").removesuffix("id") or cluster_column
    return stem + "s"


class Kind(Protocol):
    """One warehouse kind, as a strategy object (``medbench.kinds.kind(name)``)."""

    name: ClassVar[str]                  # as task specs and the warehouse's ``tasks.kind`` spell it
    schema: ClassVar[pa.Schema]          # its own predictions columns (docs/duckdb.md), first in every family's
    columns_text: ClassVar[str]          # those columns for people (result page, artifact route)
    paired_columns: ClassVar[tuple[str, ...]]  # what pairing reads, besides instance_id and the cluster column
    # the ground truth of an item, among its columns: two results are paired against a reference model only
    # when they agree on it item by item (``pipelines.engine.reference_model``); nothing else assumes a ``label``
    truth_columns: ClassVar[tuple[str, ...]]
    # DuckDB types of its own columns in its ``predictions_<kind>`` table (docs/duckdb.md), where
    # they differ from the Parquet's (score's 0/1 ``label`` INTEGER); the rest keep the file's types
    sql_types: ClassVar[Mapping[str, str]]
    # optional: list columns (one entry per grade, say) that its DuckDB table unnests into one row per
    # entry, the item's other columns repeated (the rubric kind's grades); a kind without it: none
    sql_unnest: ClassVar[tuple[str, ...]] = ()
    picture: ClassVar[str]               # the name of its main picture (``figures`` declares them all)
    item_noun: ClassVar[str]             # what one prediction is about, plural, in the site's words ("items")
    parses_replies: ClassVar[bool]       # replies are parsed into answers, so a parse rate exists
    # what an official package yields per instance (``{"instance_id", <answer_field>}``, pipelines.official)
    answer_field: ClassVar[str]
    legacy_method: ClassVar[str]         # interval method of a metric published before methods were recorded
    comparison_method: ClassVar[str]     # its paired test and interval in words (site, About page, OpenAPI)

    def compare(self, a: Columns, b: Columns, cluster_column: str | None, replicates: int,
                seed: int) -> Comparison:
        """The paired test and its interval of A against B on aligned columns (raises ComparisonError)."""

    def baseline_difference(self, a: Columns, b: Columns, cluster_column: str | None, replicates: int,
                            seed: int) -> BaselineDifference | None:
        """A minus the reference model's B on aligned columns of the same items; None when it is undefined."""

    def rank_intervals(self, aligned: Sequence[Columns], cluster_column: str | None, replicates: int,
                       seed: int) -> RankBlock:
        """Rank intervals of results in leaderboard order, from one joint paired bootstrap."""

    def check_answer(self, value: Any) -> Any:
        """One official package's answer as the kind stores it; a ValueError says what is wrong."""

    def figures(self, extras: Mapping[str, Any], metrics: Mapping[str, float]) -> list[Any]:
        """The figures a result page draws (``medbench.figures.Figure``), from the result's
        extras and metric values by name; the kind alone reads its extras' keys."""

    def unparsed_sample(self, extras: Mapping[str, Any]) -> list[tuple[str, str]] | None:
        """(instance id, output) of the first replies the parser could not read; None: not recorded."""

    def served_extras(self, extras: Mapping[str, Any]) -> dict[str, Any]:
        """The extras as ``/v1/results/{run_id}`` serves them (what has a field of its own left out)."""

    def chance(self, primary_metric: str, spec: Mapping[str, Any]) -> float | None:
        """Where chance lies on the primary metric (the site's dashed line), None when unknown."""
