"""The Dagster instance ``medbench materialize`` runs its evaluations on: the instance of
DAGSTER_HOME, made safe for several in-process runs at once (``--jobs N`` runs them in threads).

Two things Dagster does per run assume one run per process:

- **Compute-log capture** (``LocalComputeLogManager``, the default) mirrors the *process's* stdout
  and stderr into per-run files with ``os.dup2``. Runs started and finished in overlapping threads
  restore each other's saved descriptors, so the process's stdout ends up pointing into some run's
  log file: measured in CI against the Postgres deploy config, ``medbench materialize --demo`` then
  exited 0 with its report (and every later line) written into a run's compute log, not the
  terminal. The CLI's instance therefore captures nothing (``NoOpComputeLogManager``): each run's
  structured events (``context.log``, materialisations, checks) are in the event log as always, and
  what the steps print goes to the terminal. Runs launched by the UI or the daemon run one per
  process and keep the configured capture.
- **Python log handlers**: Dagster calls ``logging.config.dictConfig`` at the start of every run,
  which from concurrent threads deadlocks CPython's logging locks; with no handlers configured the
  call yields nothing, so it is skipped.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from dagster._core.instance.ref import InstanceRef

NO_CAPTURE = {"compute_logs": {"module": "dagster._core.storage.noop_compute_log_manager",
                               "class": "NoOpComputeLogManager"}}


def open_cli_instance(home: Path) -> dg.DagsterInstance:
    """The instance configured by ``home/dagster.yaml``, with compute-log capture off and per-run
    logging configuration skipped (see the module docstring)."""
    instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), overrides=NO_CAPTURE))
    if not instance.get_python_log_dagster_handler_config():
        instance.get_yaml_python_handlers = lambda: []
    return instance
