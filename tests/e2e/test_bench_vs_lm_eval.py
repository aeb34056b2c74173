"""bench/vs_lm_eval keeps working: at the CI size (4 items, 8 new tokens) it prints its ratio line and
finds medbench's and lm-evaluation-harness's generations identical.

Only the shape of the output is checked, never the speed: a shared CI machine proves nothing about
it (the full run is done by hand and quoted in the README). The comparison helper is checked on its
own, without a model, so a difference is known to be caught and named.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from support.paths import REPO

from bench.vs_lm_eval import count_identical, first_difference

RATIO = re.compile(
    r"^medbench transformers backend: [\d.]+ items/s; lm-evaluation-harness hf: [\d.]+ items/s; "
    r"medbench / lm-eval: [\d.]+ x$",
    re.MULTILINE,
)


@pytest.mark.slow
def test_vs_lm_eval_tiny_prints_ratio_and_identical_generations(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench.vs_lm_eval", "--n", "4", "--max-new-tokens", "8", "--batch-size", "2",
         "--repeats", "1", "--models-dir", str(tmp_path / "models")],
        cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert RATIO.search(proc.stdout), proc.stdout
    assert "generations identical: 4/4" in proc.stdout.splitlines(), proc.stdout


def test_first_difference_names_the_item_and_both_texts():
    order = ["q1#0", "q2#1", "q3#2"]
    ours = {"q1#0": "A", "q2#1": "B", "q3#2": "C"}
    assert first_difference(ours, dict(ours), order) is None
    assert count_identical(ours, dict(ours), order) == 3
    theirs = {"q1#0": "A", "q2#1": "B!", "q3#2": "C"}
    assert first_difference(ours, theirs, order) == "item 1 (q2#1): medbench 'B' vs lm-eval 'B!'"
    assert count_identical(ours, theirs, order) == 2
    missing = {"q1#0": "A", "q2#1": "B"}
    assert first_difference(ours, missing, order) == "item 2 (q3#2): medbench 'C' vs lm-eval None"

