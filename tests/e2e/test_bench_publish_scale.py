"""bench/publish_scale keeps working: the smoke sizes print every line (the shape, never a speed)."""

from __future__ import annotations

import re

import pytest

from bench import publish_scale


@pytest.mark.slow
def test_smoke_run_prints_sizes_and_growth(capsys: pytest.CaptureFixture[str]) -> None:
    assert publish_scale.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    sizes = [int(m) for m in re.findall(r"^\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$", out, re.M)]
    assert len(sizes) == 2 and sizes[0] < sizes[1], out
    logs = re.findall(r"^log: (\d+) entries, append [\d.]+ s, audit [\d.]+ s, longest inclusion proof (\d+) hashes "
                      r"\(bound ceil\(log2 n\) = (\d+): within\), \d+ us a proof$", out, re.M)
    assert len(logs) == 2 and all(int(longest) <= int(bound) for _, longest, bound in logs), out
    for name in ("publish", r"release lookup \(cold\)"):
        assert re.search(rf"^{name}: [\d.]+x the time for [\d.]+x the results \([\d.]+ per unit of growth\): "
                         r"(linear or better|FASTER THAN LINEAR)$", out, re.M), out
    assert re.search(r"^release history: peak RSS [\d.]+ MiB with 10 releases, [\d.]+ MiB with 100 \([\d.]+x; "
                     r"target within 1.3x: (within|OVER)\)$", out, re.M), out


def test_two_sizes_are_needed() -> None:
    with pytest.raises(SystemExit):
        publish_scale.main(["--sizes", "100"])
