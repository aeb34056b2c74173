"""The vitaldb-ioh benches keep working (tiny scale; the full runs are done by hand)."""

from __future__ import annotations

import pytest

from bench import ioh_bootstrap, ioh_windows

# Benchmarks at tiny size run in the slow lane with the other end-to-end checks (scripts/test).
pytestmark = pytest.mark.slow


def test_windows_bench_runs_at_tiny_scale(capsys):
    assert ioh_windows.main(["--scale", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "agreement on the 2 reference cases: identical kept windows, labels and inputs" in out
    assert any(line.startswith("ratio: ") and "x faster" in line for line in out.splitlines())


def test_bootstrap_bench_runs_at_tiny_scale(capsys):
    assert ioh_bootstrap.main(["--scale", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "largest difference over the 3 compared replicates" in out
    assert any(line.startswith("ratio: ") and "x faster" in line for line in out.splitlines())
