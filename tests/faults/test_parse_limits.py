"""Parsing runs in one child process per batch, under a memory cap and a time limit (issue 35, item 4).

The fault: outputs were parsed in the scoring process itself, with no limit, by a parser that was
worse than quadratic; 16 KB of ``"정답: A 아니라 B "`` took 22 s and 1,045 such outputs would take
hours of host CPU. Now a batch that runs out of time or memory fails the run with one line, and never
turns into a parse status (``medbench reproduce`` compares predictions byte for byte).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from support.paths import REPO
from support.parser_inputs import attack_a, attack_korean, backtracking_shapes

from pipelines.tasks.clinicalqa.parse_batch import ParsingFailed, parse_batch
from pipelines.tasks.clinicalqa.parsing.versions import parse_answer
from pipelines.tasks.clinicalqa.score import ScoringError, predictions_table

TEXTS = ["Metformin", "Insulin", "경구 항생제", "수술", "경과 관찰"]


def items(n: int) -> list[dict]:
    return [{"instance_id": str(i), "label": "B", "options": TEXTS} for i in range(n)]


def test_a_batch_over_its_time_limit_fails_the_run_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDBENCH_PARSE_TIMEOUT_S", "1")
    slow = attack_korean(16_000)  # the frozen v2 still takes seconds on it
    start = time.monotonic()
    with pytest.raises(ScoringError) as info:
        predictions_table(items(3), {str(i): slow for i in range(3)}, parser="v2")
    assert time.monotonic() - start < 30
    message = str(info.value)
    assert "took longer than 1 s" in message and "MEDBENCH_PARSE_TIMEOUT_S" in message and "\n" not in message


def test_a_batch_over_its_memory_cap_fails_with_one_line() -> None:
    """In a fresh interpreter, so that the caller's free heap (which the forked child inherits) does not
    decide whether a 20 MB reply fits in 1 MiB more."""
    script = ("from pipelines.tasks.clinicalqa.parse_batch import ParsingFailed, parse_batch\n"
              "try:\n    parse_batch(['A ' * 10_000_000], tuple('ABCDE'), 'v3', memory_mib=1)\n"
              "except ParsingFailed as exc:\n    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and len(lines) == 1, proc.stdout + proc.stderr
    assert "ran out of its 1 MiB" in lines[0] and "MEDBENCH_PARSE_MEMORY_MIB" in lines[0]


def test_the_child_parses_as_the_parser_does() -> None:
    outputs = ["정답: B", "C가 정답입니다.", None, "", "The answer is metformin.", "A 또는 C", "Answer: E. coli"]
    texts = [dict(zip("ABCDE", TEXTS))] * len(outputs)
    for version in ("v1", "v2", "v3"):
        expected = [parse_answer(o, "ABCDE", version, t) for o, t in zip(outputs, texts)]
        assert parse_batch(outputs, tuple("ABCDE"), version, texts) == expected, version


def test_the_attack_parses_within_the_limit_with_v3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDBENCH_PARSE_TIMEOUT_S", "60")
    table = predictions_table(items(2), {"0": attack_korean(16_000), "1": "정답: B"}, parser="v3")
    assert table.column("prediction").to_pylist() == ["B", "B"]


def test_a_bad_limit_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDBENCH_PARSE_TIMEOUT_S", "soon")
    with pytest.raises(ScoringError, match="MEDBENCH_PARSE_TIMEOUT_S='soon' is not a number"):
        predictions_table(items(1), {"0": "정답: B"}, parser="v3")


def test_v3_parses_the_attack_and_the_backtracking_shapes_well_within_the_limit() -> None:
    """The old v3 took 22 s on the second attack reply and 18 to 196 s on 2,000 blanks of these shapes."""
    replies = [attack_a(16_000), attack_korean(16_000), *backtracking_shapes(16_000)]
    texts = [dict(zip("ABCDE", TEXTS))] * len(replies)
    start = time.monotonic()
    parsed = parse_batch(replies, tuple("ABCDE"), "v3", texts, timeout_s=60)
    assert len(parsed) == len(replies) and time.monotonic() - start < 60
