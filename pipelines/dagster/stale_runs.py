"""Runs whose process was killed, and the temp files killed writers left: found and cleared.

Why: a SIGKILLed materialization leaves its Dagster run STARTED forever (nothing is left to
report its end), and with the queued coordinator's ``max_concurrent_runs: 2`` two such runs block
every run launched from the UI; the temp folders of killed writers (``snapshots/*/.*.tmp/``) were
never removed either. Every run a medbench launcher starts carries ``run_tags()`` (this host and
this pid), so a later process on the same host can tell for sure that a run's process is gone
(no such pid, or a pid reused by a process that started after the run) and report it failed.
Runs of other hosts are left alone: their liveness is Dagster run monitoring's job (deploy/).

Launchers (the CLI's orchestrator, the sensor) call ``recover(instance, data)`` before they start
work; ``fail_dead_runs`` and ``run_tags`` are the parts.
"""

from __future__ import annotations

import datetime as dt
import os
import socket

import dagster as dg

from medbench.layout import DataDir
from medbench.tempfiles import clean_stale_temp, writer_alive

HOST_TAG = "medbench/host"
PID_TAG = "medbench/pid"
ACTIVE = [dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.NOT_STARTED]


def run_tags() -> dict[str, str]:
    """The tags a launcher adds to every run it starts: which host and process runs it."""
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}


def _created_at(record) -> float:
    created = record.create_timestamp
    if isinstance(created, dt.datetime):
        if created.tzinfo is None:
            created = created.replace(tzinfo=dt.timezone.utc)
        return created.timestamp()
    return float(created or 0.0)


def fail_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Report FAILURE for every active run of this host whose launching process is gone; their ids."""
    host = socket.gethostname()
    records = instance.get_run_records(filters=dg.RunsFilter(statuses=ACTIVE, tags={HOST_TAG: host}))
    failed: list[str] = []
    for record in records:
        run = record.dagster_run
        try:
            pid = int(run.tags.get(PID_TAG, ""))
        except ValueError:
            continue
        if pid == os.getpid() or writer_alive(pid, _created_at(record)):
            continue
        instance.report_run_failed(run, f"medbench: the process that ran this run (pid {pid} on {host}) is gone "
                                        "(killed); reported failed so it no longer holds a run slot")
        failed.append(run.run_id)
    return failed


def recover(instance: dg.DagsterInstance, data: DataDir) -> str:
    """Before a materialization: fail this host's dead runs and remove killed writers' temp files.

    Returns a one-line summary for the log."""
    failed = fail_dead_runs(instance)
    removed = clean_stale_temp(data)
    parts = []
    if failed:
        parts.append(f"reported {len(failed)} dead run{'s' if len(failed) != 1 else ''} failed "
                     f"({', '.join(r[:8] for r in failed)})")
    if removed:
        parts.append(f"removed {len(removed)} temporary file{'s' if len(removed) != 1 else ''} of killed writers")
    return "recovered: " + "; ".join(parts) if parts else "recovered: nothing to do"
