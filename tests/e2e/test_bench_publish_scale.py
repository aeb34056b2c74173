"""bench/publish_scale keeps working: the tiny boards print every line (the shape, never a speed)."""

from __future__ import annotations

import re

import pytest

from bench import publish_scale


@pytest.mark.slow
def test_tiny_run_prints_boards_ratios_and_history(capsys: pytest.CaptureFixture[str]) -> None:
    assert publish_scale.main(["--tiny", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\d+%\s+[\d.]+\s+[\d.]+$", out, re.M)
    assert [int(t) for t, _ in rows] == [1, 2] and int(rows[0][1]) < int(rows[1][1]), out
    assert "warning" not in out, out  # every measured publish went through the change, not the whole catalog
    logs = re.findall(r"^log at \d+ results: (\d+) entries, longest inclusion proof (\d+) hashes "
                      r"\(bound ceil\(log2 n\) = (\d+): within\)$", out, re.M)
    assert len(logs) == 2 and all(int(longest) <= int(bound) for _, longest, bound in logs), out
    assert re.search(r"^publish: [\d.]+x the time at \d+ results as at \d+ \([\d.]+x the results; target at most 3x: "
                     r"(within|OVER)\)$", out, re.M), out
    assert re.search(r"^release lookup \(cold\): [\d.]+x the time for [\d.]+x the results \([\d.]+ per unit of "
                     r"growth\): (linear or better|FASTER THAN LINEAR)$", out, re.M), out
    assert re.search(r"^release history: peak RSS [\d.]+ MiB with 10 releases, [\d.]+ MiB with 100 \([\d.]+x; "
                     r"target within 1.3x: (within|OVER)\)$", out, re.M), out


def test_two_boards_are_needed() -> None:
    with pytest.raises(SystemExit):
        publish_scale.main(["--tasks", "1"])
