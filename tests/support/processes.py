"""Stopping the background processes a test started (daemons, workers): by process group, TERM then KILL,
since ``dagster-daemon`` and celery workers may ignore SIGTERM or leave children behind. One
implementation, shared with the benches that start the same processes (``bench/_servers.py``)."""

from __future__ import annotations

from bench._servers import stop_group

__all__ = ["stop_group"]
