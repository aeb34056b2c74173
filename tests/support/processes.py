"""Stopping the background processes a test started (daemons, workers): by process group, TERM then KILL,
since ``dagster-daemon`` and celery workers may ignore SIGTERM or leave children behind."""

from __future__ import annotations

import os
import subprocess


def stop_group(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Stop a process started with start_new_session=True and all its children (by its group id)."""
    if proc.poll() is not None:
        return
    for sig, wait in ((15, timeout), (9, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue
