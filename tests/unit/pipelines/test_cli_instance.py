"""The CLI's instance runs several in-process runs at once without losing the process's stdout.

With Dagster's default compute-log capture, overlapping runs in threads each ``dup2`` stdout into
their log file and restore what they saved, so the process's stdout can end up in a run's log:
``medbench materialize`` once exited 0 with its report written there. The check runs in a child
process, whose stdout is a real pipe (pytest's capture would hide the descriptor swaps)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from pipelines.dagster.cli_instance import open_cli_instance
from support.paths import REPO

OVERLAPPING_RUNS = """
import sys, threading, time
from pathlib import Path
import dagster as dg
from pipelines.dagster.cli_instance import open_cli_instance

@dg.asset
def slow_printer() -> None:
    print("a line a step prints", flush=True)
    time.sleep(0.2)

home = Path(sys.argv[1])
instance = open_cli_instance(home) if sys.argv[2] == "cli" else dg.DagsterInstance.get()
if sys.argv[2] != "cli":  # the configured capture, with only the logging fix
    instance.get_yaml_python_handlers = lambda: []

def one(delay):
    time.sleep(delay)
    assert dg.materialize([slow_printer], instance=instance).success

threads = [threading.Thread(target=one, args=(0.07 * i,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("THE REPORT", len(instance.get_runs()), flush=True)
"""


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "dagster"
    home.mkdir()
    shutil.copyfile(REPO / "dagster.yaml", home / "dagster.yaml")
    return home


def _overlapping_runs(home: Path, which: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "DAGSTER_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", OVERLAPPING_RUNS, str(home), which], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_cli_instance_captures_no_process_output(tmp_path: Path) -> None:
    with open_cli_instance(_home(tmp_path)) as instance:
        assert type(instance.compute_log_manager).__name__ == "NoOpComputeLogManager"
        assert Path(instance.root_directory) == tmp_path / "dagster"  # the DAGSTER_HOME's storage


def test_overlapping_runs_leave_stdout_where_it_was(tmp_path: Path) -> None:
    out = _overlapping_runs(_home(tmp_path), "cli")
    assert "THE REPORT 8" in out
    assert out.count("a line a step prints") == 8  # what the steps print reaches the terminal
