"""Rank intervals for every leaderboard, computed at publish time from the stored predictions.

Leaderboards are those ``/v1/leaderboard`` can be asked for: per task version, all models (block
``model_type = ''``) and each model type present. A block holds the task version's current results
(not superseded), in leaderboard order (value descending, then eval date, then run id), and its rows
come from one joint paired bootstrap with the task's own bootstrap seed and replicates, drawn by the
task's kind (``medbench.kinds``: accuracy over items; AUROC over the clusters of the task's cluster
column, or items without one), over the items present in *every* result of the block (aligned by
``instance_id``, ``medbench.kind.align``; a result missing an item removes that item for the
whole block, and ``n_items`` says how many were used).

Every published metric gets its own block rows (``metric``), ordered in the metric's direction
(``medbench.records.metric_order_value``: higher, lower, or closest to a target), so
``/v1/leaderboard?metric=`` serves rank sets recomputed for that order:

- the task's primary metric: the kind's joint bootstrap (above);
- ``parse_rate`` of a kind that parses replies: the same joint bootstrap over items, of the
  per-item indicator "the reply parsed" (``accuracy_rank_intervals`` on it);
- any other metric (per-category accuracy, calibration, ...): no per-item resampling is available
  here, so the rows are point ranks ([rank, rank], tied only if first) and their ``method`` says
  so in words; an interval is never made up.

Only blocks whose results changed are recomputed: a block is keyed by (task, model type, metric,
sha256 of its sorted run ids), and rows of the current warehouse version with the same key are
reused as they are (the computation is deterministic in the predictions, which never change for a
run id).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np

from medbench.kind import read_aligned
from medbench.kinds import board_judge
from medbench.kinds import kind as kind_of
from medbench.stats.ranks import RankIntervals, accuracy_rank_intervals
from medbench.layout import DataDir
from warehouse.publish import superseded_map
from medbench.records import ResultRecord, metric_order_value
from warehouse.schema import LeaderboardRankRow

Log = Callable[[str], None]


def _order_key(r: ResultRecord) -> tuple:
    return (metric_order_value(r.primary), r.eval_date, r.run_id)


def metric_order(block: Sequence[ResultRecord], metric: str) -> list[ResultRecord]:
    """The block in leaderboard order by ``metric``, in its direction, then eval date, then run id."""
    return sorted(block, key=lambda r: (metric_order_value(r.metric(metric)), r.eval_date, r.run_id))


def block_metrics(block: Sequence[ResultRecord]) -> list[str]:
    """Metric names every result of the block published, in the first result's order (primary first)."""
    names = [m.name for m in block[0].metrics]
    return [n for n in names if all(r.metric(n) is not None for r in block)]


def results_key(run_ids: Sequence[str]) -> str:
    return hashlib.sha256(",".join(sorted(run_ids)).encode()).hexdigest()


def leaderboard_blocks(results: Sequence[ResultRecord], tasks: Sequence[dict] = ()
                       ) -> dict[tuple[str, str], list[ResultRecord]]:
    """(task, model type or '') -> current results in leaderboard order; of a task graded by a judge
    model, only the results by the task's judge (``medbench.kinds.board_judge``)."""
    superseded = superseded_map(list(results))
    spec_of = {f"{t['slug']}@{t['version']}": t for t in tasks}
    blocks: dict[tuple[str, str], list[ResultRecord]] = {}
    for r in results:
        if r.run_id in superseded:
            continue
        t = spec_of.get(r.task)
        judge = board_judge(t.get("kind", ""), t.get("spec") or {}, r.demo) if t is not None else None
        if judge is not None and (r.judge is None or r.judge.model != judge):
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


PARSE_METHOD = "joint paired bootstrap over items of the per-item parse indicator; tie: exact McNemar-dual interval"


def parse_rate_intervals(data: DataDir, block: Sequence[ResultRecord], replicates: int,
                         seed: int) -> tuple[RankIntervals, int, str]:
    """Rank sets by parse rate: the accuracy bootstrap of "the reply parsed" per item."""
    aligned, _ = read_aligned([data.predictions_path(r.run_id) for r in block], ["parse_status"])
    parsed = np.stack([np.asarray(c["parse_status"]) == "ok" for c in aligned])
    if parsed.shape[1] == 0:
        raise ValueError("the results share no items")
    iv = accuracy_rank_intervals(parsed, replicates, seed, np.arange(1, len(block) + 1))
    return iv, parsed.shape[1], PARSE_METHOD


def point_only_method(metric: str, block: Sequence[ResultRecord]) -> str:
    m = block[0].metric(metric)
    order = {"lower": "value ascending", "target": f"|value - {m.target if m and m.target is not None else 0.0:g}| "
             "ascending"}.get(m.direction if m else "higher", "value descending")
    return (f"point ranks only ({order}): no rank interval is available for {metric} "
            "(no per-item resampling at publish)")


def _point_rows(task: str, model_type: str, metric: str, block: Sequence[ResultRecord],
                key: str) -> list[LeaderboardRankRow]:
    method = point_only_method(metric, block)
    return [LeaderboardRankRow(
        task=task, model_type=model_type, metric=metric, run_id=r.run_id, rank=pos + 1, rank_low=pos + 1,
        rank_high=pos + 1, marginal_rank_low=pos + 1, marginal_rank_high=pos + 1, tied_with_leader=pos == 0,
        leader_run_id=block[0].run_id, diff_low=None, diff_high=None, method=method, replicates=0,
        dropped_replicates=0, seed=0, n_items=0, results_key=key) for pos, r in enumerate(block)]


def rank_rows(data: DataDir, results: Sequence[ResultRecord], tasks: Sequence[dict],
              previous: Sequence[LeaderboardRankRow], log: Log | None = None) -> list[LeaderboardRankRow]:
    """Rows of ``leaderboard_ranks`` for every block and metric; unchanged blocks reuse ``previous`` rows."""
    spec_of = {f"{t['slug']}@{t['version']}": t for t in tasks}
    old: dict[tuple[str, str, str, str], list[LeaderboardRankRow]] = {}
    for row in previous:
        old.setdefault((row.task, row.model_type, row.metric, row.results_key), []).append(row)
    rows: list[LeaderboardRankRow] = []
    for (task, model_type), members in leaderboard_blocks(results, tasks).items():
        key = results_key([r.run_id for r in members])
        spec = spec_of.get(task)
        if spec is None:
            continue  # no spec: nothing to rank with (the API falls back to the point rank)
        for metric in block_metrics(members):
            if (task, model_type, metric, key) in old:
                rows.extend(old[(task, model_type, metric, key)])
                continue
            block = metric_order(members, metric)
            if metric == members[0].primary.name:
                compute = lambda b, n, s, sp=spec: block_intervals(
                    data, sp["kind"], b, n, s, sp.get("cluster_column"))
            elif metric == "parse_rate" and kind_of(spec["kind"]).parses_replies:
                compute = lambda b, n, s: parse_rate_intervals(data, b, n, s)
            else:
                rows.extend(_point_rows(task, model_type, metric, block, key))
                continue
            if not all(data.predictions_path(r.run_id).exists() for r in block):
                continue  # no predictions: nothing to resample (the API falls back to the point rank)
            boot = spec["spec"].get("bootstrap", {})
            replicates, seed = int(boot.get("replicates", 1000)), int(boot.get("seed", 0))
            try:
                iv, n_items, method = compute(block, replicates, seed)
            except ValueError as exc:  # no shared items, one class only
                if log:
                    log(f"rank intervals for {task} ({model_type or 'all models'}, {metric}) skipped: {exc}")
                continue
            rows.extend(_rows(task, model_type, metric, block, iv, n_items, method, seed, key))
    return rows


def _rows(task: str, model_type: str, metric: str, block: Sequence[ResultRecord], iv: RankIntervals,
          n_items: int, method: str, seed: int, key: str) -> list[LeaderboardRankRow]:
    return [LeaderboardRankRow(
        task=task, model_type=model_type, metric=metric, run_id=r.run_id, rank=pos + 1,
        rank_low=int(iv.rank_low[pos]), rank_high=int(iv.rank_high[pos]),
        marginal_rank_low=int(iv.marginal_rank_low[pos]), marginal_rank_high=int(iv.marginal_rank_high[pos]),
        tied_with_leader=bool(iv.tied_with_leader[pos]), leader_run_id=block[iv.leader].run_id,
        diff_low=float(iv.diff_low[pos]), diff_high=float(iv.diff_high[pos]), method=method,
        replicates=iv.n_replicates, dropped_replicates=iv.n_dropped, seed=seed, n_items=n_items, results_key=key,
    ) for pos, r in enumerate(block)]
