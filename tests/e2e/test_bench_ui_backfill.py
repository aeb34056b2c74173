"""CI runs the UI-path benchmark at a tiny size: a real daemon and webserver, the UI's ranged backfill
(one run for every partition), a run-per-partition backfill and an evaluate_all run over reused
partitions must all succeed and the comparison lines be printed."""

import os
import subprocess
import sys

import pytest

from support.paths import REPO


@pytest.mark.slow
def test_ui_backfill_bench_tiny():
    proc = subprocess.run([sys.executable, "-m", "bench.ui_backfill", "--tiny"], cwd=REPO, capture_output=True,
                          text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for head in ("UI backfill (ranged)     6 reused partitions", "1 run, until marked complete",
                 "one run per partition    6 reused partitions", "evaluate_all             6 reused partitions",
                 "one run per partition / ranged backfill"):
        assert head in proc.stdout, proc.stdout
