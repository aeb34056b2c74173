"""Ctrl-C during ``medbench materialize``: it stops at once with exit 130, its Dagster run is marked
failed (never left STARTED), nothing generated is lost, and the next ``materialize`` resumes from the
stored outputs instead of paying for them again."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.loopback_chat_server import LoopbackChatServer, Reply
from support.model_specs import specs_with_served
from support.paths import REPO

pytestmark = pytest.mark.slow
SAFETY_LIMIT_S = 300  # a bound on waiting for a stuck child, not a timing assertion



def _stored(data: Path, before: frozenset[Path] = frozenset()) -> int:
    """Complete lines in the generation stores not in ``before`` (a line torn by the stop is not a
    finished item)."""
    total = 0
    for path in set((data / "generations").glob("*.jsonl")) - before:
        raw = path.read_bytes()
        total += raw[: raw.rfind(b"\n") + 1].count(b"\n")
    return total


def _active_runs(home: Path) -> list[tuple[str, str]]:
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        return [(r.run_id, r.status.value) for r in instance.get_runs() if not r.is_finished]


def test_ctrl_c_stops_marks_the_run_failed_and_the_next_run_resumes(demo_data: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(demo_data, data, ignore=shutil.ignore_patterns("dagster"))
    demo_stores = frozenset((data / "generations").glob("*.jsonl"))
    command = [sys.executable, "-m", "pipelines.cli.main", "materialize", "--demo", "--task", "clinicalqa@0",
               "--model", "acme/served"]
    with LoopbackChatServer(lambda instance_id, attempt: Reply(delay_s=0.05)) as server:
        specs = specs_with_served(tmp_path / "specs", server.base_url)
        env = {**os.environ, "MEDBENCH_DATA": str(data), "MEDBENCH_SPECS": str(specs),
               "DAGSTER_HOME": str(data / "dagster"), "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        deadline = time.monotonic() + SAFETY_LIMIT_S
        while _stored(data, demo_stores) < 20:
            if proc.poll() is not None:
                pytest.fail(f"materialize ended before it could be interrupted:\n{proc.stdout.read()[-3000:]}")
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail("no output stored within the safety limit")
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=SAFETY_LIMIT_S)[0]
        asked_first = len(server.requests)
        stored_first = _stored(data, demo_stores)

        assert proc.returncode == 130, out[-3000:]
        assert "interrupted" in out and "Traceback" not in out, out[-3000:]
        assert "marked run" in out and "failed: interrupted" in out, out[-3000:]
        assert _active_runs(data / "dagster") == []  # nothing left STARTED (or queued) behind
        assert 20 <= stored_first < 1045

        again = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=SAFETY_LIMIT_S)
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
        assert "clinicalqa@0|acme/served" in again.stdout and " ran " in again.stdout, again.stdout[-3000:]
        asked_again = len(server.requests) - asked_first
    # The second run asked only for what was not stored (each stored item is never asked again).
    assert asked_again == 1045 - stored_first, (asked_first, stored_first, asked_again)
    assert _stored(data, demo_stores) == 1045
    assert _active_runs(data / "dagster") == []
