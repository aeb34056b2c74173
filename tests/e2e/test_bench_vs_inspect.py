"""bench/vs_inspect keeps working: at the CI size (``--tiny``) medbench's judging and Inspect AI's
model-graded scorer give the same met/not-met verdict on every criterion, and the three rate lines,
the ratio and the overhead are printed (docs/benchmarks.md).

Only the shape of the timing lines is checked, never the figures: a shared CI machine proves nothing
about them (the lead runs the full size on a quiet machine). The comparison helpers are checked on
their own, so a differing verdict is known to be caught and named.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from support.paths import REPO

from bench._inspect_peer import read_grades
from bench.vs_inspect import first_difference, identical

LINES = [
    re.compile(r"^answers: 12 \(6 items x 2 answerers\), (\d+) criteria graded per pass, medians of 1$", re.M),
    re.compile(r"^raw calls to the endpoint: [\d.]+ s wall, [\d.]+ criteria/s$", re.M),
    re.compile(r"^medbench judging: [\d.]+ s wall, [\d.]+ criteria/s$", re.M),
    re.compile(r"^inspect model-graded scorer: [\d.]+ s wall, [\d.]+ criteria/s$", re.M),
    re.compile(r"^medbench / inspect: [\d.]+ x criteria/s \(target >= 1.0x: (met|MISSED)\)$", re.M),
    re.compile(r"^medbench overhead over raw calls: [+-][\d.]+% \(target < 10%: (met|MISSED)\)$", re.M),
]


def test_vs_inspect_tiny_agrees_item_by_item_and_prints_its_figures():
    proc = subprocess.run([sys.executable, "-m", "bench.vs_inspect", "--tiny"], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    for line in LINES:
        assert line.search(proc.stdout), (line.pattern, proc.stdout)
    criteria = int(LINES[0].search(proc.stdout).group(1))
    assert criteria >= 12 * 3  # every answer has its gold, distractor and reasoning criteria
    assert f"met/not-met identical: {criteria}/{criteria} (target: all: met)" in proc.stdout.splitlines()


def test_a_differing_verdict_is_counted_and_named():
    ours = {"concise:1": {"gold": True, "avoid-B": False}, "concise:2": {"gold": False}}
    assert identical(ours, {k: dict(v) for k, v in ours.items()}) == 3
    assert first_difference(ours, {k: dict(v) for k, v in ours.items()}) is None
    theirs = {"concise:1": {"gold": True, "avoid-B": True}, "concise:2": {}}
    assert identical(ours, theirs) == 1
    assert first_difference(ours, theirs) == "concise:1 criterion avoid-B: medbench False vs inspect True"


def test_the_inspect_scorer_reads_the_judge_json_reply():
    reply = 'Here: {"grades": [{"id": "gold", "met": true, "justification": "x"}, {"id": "r", "met": "yes"}]}'
    assert read_grades(reply) == {"gold": True}
    assert read_grades("no json") == {} and read_grades("{broken") == {}
