"""Leaderboard rank sets as the API serves them, for any published metric (``?metric=``).

The ``leaderboard_ranks`` table holds one block of rows per (task, model type, metric), computed at
publish (``pipelines.engine.ranking``). A board ranked by a metric other than the primary is
re-sorted here with the very key the publisher used (``medbench.records.metric_order_value``:
the metric's direction, then eval date, then run id), so a row's stored point rank matches its
position and its stored rank set applies. A row the table does not hold at that rank (a file from
an older schema, no predictions) is served as a point, [rank, rank], tied only if first, with the
board's ``rank_method`` saying so.

Its file name is shared on purpose: the API's side of the computation of the same name (it reads
published rows; the numbers are computed in the pipeline).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from warehouse.read import Published
from medbench.records import metric_order_value
from warehouse.schema import LeaderboardRankRow

POINT_METHOD = "point ranks only: no rank set was computed for this board"


class RankEntry(NamedTuple):
    rank: int
    low: int  # hull of the simultaneous set and the marginal interval
    high: int
    tied: bool  # the simultaneous set contains 1
    marginal_low: int
    marginal_high: int
    method: str


RankMap = Mapping[tuple[str, str, str, str], RankEntry]


def rank_map(rows: Iterable[LeaderboardRankRow]) -> dict[tuple[str, str, str, str], RankEntry]:
    """(task, model type or '', metric, run_id) -> the stored rank set."""
    return {(r.task, r.model_type, r.metric, r.run_id): RankEntry(
        r.rank, r.rank_low, r.rank_high, r.tied_with_leader, r.marginal_rank_low, r.marginal_rank_high, r.method)
        for r in rows}


def rank_entry(ranks: RankMap, task: str, model_type: str | None, metric: str, run_id: str, rank: int) -> RankEntry:
    found = ranks.get((task, model_type or "", metric, run_id))
    if found is None or found.rank != rank:
        return RankEntry(rank, rank, rank, rank == 1, rank, rank, POINT_METHOD)
    return found


def task_metrics(board: Sequence[Published]) -> list[str]:
    """Metric names the board's results publish, the primary first, then in first-seen order."""
    seen: dict[str, None] = {}
    for p in board:
        for m in p.record.metrics:
            seen.setdefault(m.name, None)
    return list(seen)


def metric_board(board: Sequence[Published], metric: str) -> tuple[Published, ...]:
    """The board in ``metric``'s direction (a result without it last), then eval date, then run id."""
    return tuple(sorted(board, key=lambda p: (metric_order_value(p.record.metric(metric)), p.record.eval_date,
                                              p.record.run_id)))


def board_method(entries: Sequence[RankEntry]) -> str:
    """One method text for a board: the rows' (they share one per block), else the point fallback."""
    methods = {e.method for e in entries}
    return methods.pop() if len(methods) == 1 else "; ".join(sorted(methods)) if methods else POINT_METHOD
