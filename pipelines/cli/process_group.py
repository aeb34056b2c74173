"""Stopping a process group: TERM, wait until every member is gone, then KILL what is left.

Why by group, and why wait for every member: ``dagster-webserver`` and ``dagster-daemon`` each
start code-server subprocesses, and the daemon (like celery workers) may ignore SIGTERM or leave
children behind even after the group's leader has exited; stopping only the leader, or returning
as soon as it exits, leaves processes holding the instance's files and ports. One implementation:
``medbench ui`` stops its children with it, and the benches and tests (``bench/_servers.py``)
stop the daemons and workers they start with it. Linux (``/proc``), where the group is read; other
systems fall back to waiting for the given processes only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of group ``pgid``, from /proc; [] where /proc is not readable."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # exited while we looked
            continue
        fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, pgrp, ...
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def _wait_gone(procs: Sequence[subprocess.Popen], pgid: int, timeout: float) -> bool:
    """Reap ``procs`` and wait for the rest of the group, up to ``timeout`` seconds; True if all gone."""
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return False
    while group_members(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def stop_group(proc: subprocess.Popen, timeout: float = 20, members: Sequence[subprocess.Popen] = ()) -> None:
    """Stop the group led by ``proc`` (started with ``start_new_session=True`` or
    ``process_group=0``) and everything in it: TERM, then KILL after ``timeout`` seconds.
    ``members``: other children of ours in that group, reaped too (no zombies left behind)."""
    procs = [proc, *members]
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:  # nothing left in the group
            _wait_gone(procs, proc.pid, wait)
            return
        if _wait_gone(procs, proc.pid, wait):
            return
