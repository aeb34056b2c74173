"""CI runs the orchestration benchmark at a tiny N: it must complete and print its three lines."""

import subprocess
import sys

import pytest

from support.paths import REPO  # noqa: E402


@pytest.mark.slow
def test_orchestration_bench_tiny():
    proc = subprocess.run([sys.executable, "-m", "bench.orchestration", "--tiny"], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for head in ("first pass", "reused pass", "I/O-bound"):
        assert head in proc.stdout, proc.stdout
