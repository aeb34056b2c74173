"""Run limits, the instance's own (``dagster.yaml``, as Dagster reads it), so that both paths honour the same numbers.

``concurrency: runs:`` holds them in Dagster's own schema: ``max_concurrent_runs`` and
``tag_concurrency_limits`` on the ``medbench/pool`` run tag (one entry per pool) and on
``dagster/partition`` (one run per partition key). With the daemon, the QueuedRunCoordinator
enforces them on queued runs; the embedded path (``medbench materialize`` without a daemon) takes
them from the instance here and enforces them itself in ``launch.py``, so no run is ever left queued with nobody to
dequeue it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import dagster as dg

POOL_TAG = "medbench/pool"
DEFAULT_MAX_RUNS = 4


@dataclass
class Limits:
    max_runs: int = DEFAULT_MAX_RUNS
    pools: dict[str, int] = field(default_factory=dict)  # pool -> at most this many runs at once

    def of(self, pool: str) -> int:
        return self.pools.get(pool, self.max_runs)


def limits_of(instance: dg.DagsterInstance) -> Limits:
    """The run limits ``instance`` applies to its queued runs: its run queue config, as Dagster itself
    reads it from ``dagster.yaml`` (``concurrency: runs:``, Dagster's defaults where it sets none)."""
    queue = instance.get_concurrency_config().run_queue_config
    max_runs = queue.max_concurrent_runs if queue is not None else DEFAULT_MAX_RUNS
    limits = Limits(max_runs=max_runs if max_runs >= 0 else 1 << 16)  # -1: no limit in Dagster's schema
    for entry in (queue.tag_concurrency_limits if queue is not None else None) or []:
        if entry.get("key") == POOL_TAG and isinstance(entry.get("value"), str):
            limits.pools[entry["value"]] = int(entry["limit"])
    return limits


def with_overrides(limits: Limits, overrides: list[str]) -> Limits:
    """``--pool gpu=1`` style overrides on top of the file's limits."""
    pools = dict(limits.pools)
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise ValueError(f"--pool {item!r}: expected NAME=N, e.g. gpu=1")
        pools[name.strip()] = int(value)
    return Limits(limits.max_runs, pools)
