"""A materialization-like Dagster run that never ends on its own, for the SIGKILL test.

Materializes one asset through ``DAGSTER_HOME``'s instance with the launcher tags
(``pipelines.dagster.stale_runs.run_tags``); the asset writes a marker file, then sleeps, so the
test can kill the process while the run is STARTED.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import dagster as dg

from pipelines.dagster.stale_runs import run_tags


def main(marker: str) -> int:
    @dg.asset
    def evaluation_like() -> None:
        Path(marker).write_text("started")
        time.sleep(600)

    with dg.DagsterInstance.get() as instance:
        dg.materialize([evaluation_like], instance=instance, tags={**run_tags(), "medbench/cli": "materialize"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
