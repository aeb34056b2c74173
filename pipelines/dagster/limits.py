"""Run limits, read from the instance's ``dagster.yaml`` so that both paths honour the same numbers.

``concurrency: runs:`` holds them in Dagster's own schema: ``max_concurrent_runs`` and
``tag_concurrency_limits`` on the ``medbench/pool`` run tag (one entry per pool) and on
``dagster/partition`` (one run per partition key). With the daemon, the QueuedRunCoordinator
enforces them on queued runs; the embedded path (``medbench materialize`` without a daemon) reads
them here and enforces them itself in ``launch.py``, so no run is ever left queued with nobody to
dequeue it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

POOL_TAG = "medbench/pool"
DEFAULT_MAX_RUNS = 4


@dataclass
class Limits:
    max_runs: int = DEFAULT_MAX_RUNS
    pools: dict[str, int] = field(default_factory=dict)  # pool -> at most this many runs at once

    def of(self, pool: str) -> int:
        return self.pools.get(pool, self.max_runs)


def read_limits(dagster_home: Path) -> Limits:
    """The limits in ``<dagster_home>/dagster.yaml`` (defaults where it sets none)."""
    path = Path(dagster_home) / "dagster.yaml"
    config = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
    runs = ((config.get("concurrency") or {}).get("runs") or {})
    limits = Limits(max_runs=int(runs.get("max_concurrent_runs", DEFAULT_MAX_RUNS)))
    if limits.max_runs < 0:  # -1: no limit in Dagster's schema
        limits.max_runs = 1 << 16
    for entry in runs.get("tag_concurrency_limits") or []:
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
