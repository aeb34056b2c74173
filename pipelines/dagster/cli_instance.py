"""The Dagster instance ``medbench materialize`` runs its evaluations on: the instance of
DAGSTER_HOME, made safe for several in-process runs at once (``--jobs N`` runs them in threads).

Two things Dagster does per run assume one run per process:

- **Compute-log capture** (``LocalComputeLogManager``, the default) mirrors the *process's* stdout
  and stderr into per-run files with ``os.dup2``. Runs started and finished in overlapping threads
  restore each other's saved descriptors, so the process's stdout ends up pointing into some run's
  log file: measured in CI against the Postgres deploy config, ``medbench materialize --demo`` then
  exited 0 with its report (and every later line) written into a run's compute log, not the
  terminal. The CLI's instance therefore captures nothing (``NoOpComputeLogManager``): each run's
  structured events (``context.log``, materializations, checks) are in the event log as always, and
  what the steps print goes to the terminal. Runs launched by the UI or the daemon run one per
  process and keep the configured capture.
- **Python log handlers**: Dagster calls ``logging.config.dictConfig`` at the start of every run,
  which from concurrent threads deadlocks CPython's logging locks; with no handlers configured the
  call yields nothing, so it is skipped.

The instance is opened under a file lock (``<home>/instance.lock``). Why: Dagster creates its
SQLite storages (runs, event-log index, schedules: one database and one ``alembic_version`` each)
when it first opens them, with no guard against another process doing the same. Two first
``medbench materialize`` at once on a fresh data directory then failed (``table runs already
exists``) or stamped ``alembic_version`` twice, after which every run failed with ``more than one
head present``. Under the lock the first process creates and migrates every storage (each is
touched before the lock is released); the others wait, then open what exists.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from pipelines.dagster.private_api import NO_CAPTURE, instance_from_dir
from pipelines.dagster.engine_calls import LockTimeout, exclusive

CREATE_WAIT_S = 300.0  # creating the storages takes about a second; a holder this slow is stuck


class InstanceBusy(RuntimeError):
    """Another process held the instance's creation lock for longer than ``CREATE_WAIT_S``."""


def open_cli_instance(home: Path) -> dg.DagsterInstance:
    """The instance configured by ``home/dagster.yaml``, with compute-log capture off and per-run
    logging configuration skipped (see the module docstring)."""
    try:
        with exclusive(Path(home) / "instance.lock", CREATE_WAIT_S):
            instance = instance_from_dir(home, NO_CAPTURE)
            _touch_storages(instance)
    except LockTimeout as exc:
        raise InstanceBusy(f"the Dagster instance at {home} is being created by another process "
                           f"({exc.holder}), still after {exc.waited_s:g} s; stop that process or "
                           "use another DAGSTER_HOME") from None
    if not instance.get_python_log_dagster_handler_config():
        instance.get_yaml_python_handlers = lambda: []
    return instance


def _touch_storages(instance: dg.DagsterInstance) -> None:
    """Read each storage once, so that any one Dagster creates lazily exists before the lock is released."""
    instance.get_runs(limit=1)
    instance.get_asset_keys(limit=1)
    instance.all_instigator_state()
