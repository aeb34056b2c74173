"""Rank intervals for every leaderboard, computed at publish time from the stored predictions.

Leaderboards are those ``/v1/leaderboard`` can be asked for: per task version, all models (block
``model_type = ''``) and each model type present. A block holds the task version's current results
(not superseded), in leaderboard order (value descending, then eval date, then run id), and its rows
come from one joint paired bootstrap with the task's own bootstrap seed and replicates, drawn by the
task's kind (``pipelines.kinds``: accuracy over items; AUROC over the clusters of the task's cluster
column, or items without one), over the items present in *every* result of the block (aligned by
``instance_id``, ``pipelines.core.kind.align``; a result missing an item removes that item for the
whole block, and ``n_items`` says how many were used).

Only blocks whose results changed are recomputed: a block is keyed by (task, model type, sha256 of
its sorted run ids), and rows of the current warehouse version with the same key are reused as they
are (the computation is deterministic in the predictions, which never change for a run id).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence

from pipelines.core.kind import read_aligned
from pipelines.kinds import kind as kind_of
from pipelines.stats.ranks import RankIntervals
from warehouse.layout import DataDir
from warehouse.publish import superseded_map
from warehouse.records import ResultRecord
from warehouse.schema import LeaderboardRankRow

Log = Callable[[str], None]


def _order_key(r: ResultRecord) -> tuple:
    v = r.primary.value
    return (-(v if not math.isnan(v) else -math.inf), r.eval_date, r.run_id)


def results_key(run_ids: Sequence[str]) -> str:
    return hashlib.sha256(",".join(sorted(run_ids)).encode()).hexdigest()


def leaderboard_blocks(results: Sequence[ResultRecord]) -> dict[tuple[str, str], list[ResultRecord]]:
    """(task, model type or '') -> current results in leaderboard order."""
    superseded = superseded_map(list(results))
    blocks: dict[tuple[str, str], list[ResultRecord]] = {}
    for r in results:
        if r.run_id in superseded:
            continue
        blocks.setdefault((r.task, ""), []).append(r)
        blocks.setdefault((r.task, r.model.type), []).append(r)
    return {key: sorted(rs, key=_order_key) for key, rs in sorted(blocks.items())}


def block_intervals(data: DataDir, kind: str, block: Sequence[ResultRecord], replicates: int,
                    seed: int, cluster_column: str | None = None) -> tuple[RankIntervals, int, str]:
    """The block's rank intervals, aligned items and method, as the task's kind computes them."""
    strategy = kind_of(kind)
    columns = [*strategy.paired_columns, *([cluster_column] if cluster_column else [])]
    aligned, _ = read_aligned([data.predictions_path(r.run_id) for r in block], columns)
    ranked = strategy.rank_intervals(aligned, cluster_column, replicates, seed)
    return ranked.intervals, ranked.n_items, ranked.method


def rank_rows(data: DataDir, results: Sequence[ResultRecord], tasks: Sequence[dict],
              previous: Sequence[LeaderboardRankRow], log: Log | None = None) -> list[LeaderboardRankRow]:
    """Rows of ``leaderboard_ranks`` for every block; unchanged blocks reuse ``previous`` rows."""
    spec_of = {f"{t['slug']}@{t['version']}": t for t in tasks}
    old: dict[tuple[str, str, str], list[LeaderboardRankRow]] = {}
    for row in previous:
        old.setdefault((row.task, row.model_type, row.results_key), []).append(row)
    rows: list[LeaderboardRankRow] = []
    for (task, model_type), block in leaderboard_blocks(results).items():
        key = results_key([r.run_id for r in block])
        if (task, model_type, key) in old:
            rows.extend(old[(task, model_type, key)])
            continue
        spec = spec_of.get(task)
        if spec is None or not all(data.predictions_path(r.run_id).exists() for r in block):
            continue  # no spec or no predictions: nothing to resample (the API falls back to the point rank)
        boot = spec["spec"].get("bootstrap", {})
        replicates, seed = int(boot.get("replicates", 1000)), int(boot.get("seed", 0))
        try:
            iv, n_items, method = block_intervals(data, spec["kind"], block, replicates, seed,
                                                  spec.get("cluster_column"))
        except ValueError as exc:  # no shared items, one class only
            if log:
                log(f"rank intervals for {task} ({model_type or 'all models'}) skipped: {exc}")
            continue
        for pos, r in enumerate(block):
            rows.append(LeaderboardRankRow(
                task=task, model_type=model_type, run_id=r.run_id, rank=pos + 1, rank_low=int(iv.rank_low[pos]),
                rank_high=int(iv.rank_high[pos]), tied_with_leader=bool(iv.tied_with_leader[pos]),
                leader_run_id=block[iv.leader].run_id, diff_low=float(iv.diff_low[pos]),
                diff_high=float(iv.diff_high[pos]), method=method, replicates=iv.n_replicates,
                dropped_replicates=iv.n_dropped, seed=seed, n_items=n_items, results_key=key,
            ))
    return rows
