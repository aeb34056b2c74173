"""Corpus equality: the rewritten parser v3 reads every reply exactly as the v3 it replaced (issue 35, item 4).

v3 used to call the frozen v2's entry point and inherit its cost (worse than quadratic: 7.9 s for
``"A " * 8000``); it now reimplements v2's reading in its own modules (``parsing.v3_base`` on the
scanner ``parsing.v3_scan``). A published result names its parser version and ``medbench
reproduce`` compares predictions byte for byte, so the rewrite must not change one answer. The
oracle is a frozen copy of the v3 that called v2 (``tests/support/parser_v3_oracle.py``, test-only,
never imported by the product), compared on:

- the demo's outputs: every simulated model's reply to every demo item, with the item's option
  texts as scoring passes them, and a share of them without;
- every string of every parser test module (v1, v2, v3), with and without option texts;
- generated adversarial replies (``support.parser_inputs``): the attack's two replies and seeded
  random mixes of every piece a rule reacts to, with and without option texts, and options given
  as digits-only or fewer letters.
"""

from __future__ import annotations

import ast
import random

import pytest
from support.parser_inputs import OPTION_TEXTS, adversarial, backtracking_shapes, demo_replies, mixed
from support.parser_v3_oracle import parse_answer_v3 as oracle
from support.paths import REPO

from pipelines.tasks.clinicalqa.parsing.v3 import parse_answer_v3
from pipelines.tasks.clinicalqa.parsing.v3_scan import line_head, normalise_text

PARSER_TESTS = sorted(p for p in (REPO / "tests" / "unit" / "pipelines").glob("test_parsing*.py") if "equality" not in p.name)
TEST_TEXTS = {"A": "Ampicillin", "B": "Metformin", "C": "경구 항생제", "D": "수술", "E": "경과 관찰"}


def differences(cases: list[tuple[str, tuple[str, ...], dict[str, str] | None]]) -> list[str]:
    out = []
    for text, options, texts in cases:
        before, after = oracle(text, options, texts), parse_answer_v3(text, options, texts)
        if before != after:
            out.append(f"{text[:120]!r} options={options} texts={bool(texts)}: was {before}, now {after}")
    return out


def test_the_demo_outputs_parse_the_same() -> None:
    replies = demo_replies()
    assert len(replies) > 8000
    cases = [(text, ("A", "B", "C", "D", "E"), texts) for text, texts in replies]
    cases += [(text, ("A", "B", "C", "D", "E"), None) for text, _ in replies[::4]]
    diff = differences(cases)
    assert not diff, f"{len(diff)} of {len(cases)} differ, e.g. " + "; ".join(diff[:3])


def _strings(path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)})


@pytest.mark.parametrize("path", PARSER_TESTS, ids=lambda p: p.name)
def test_every_parser_test_input_parses_the_same(path) -> None:
    strings = _strings(path)
    assert len(strings) > 50, "the parser tests hold their inputs as string literals"
    cases = [(s, opts, texts) for s in strings for opts in (("A", "B", "C", "D", "E"), ("A", "B", "C", "D"))
             for texts in (None, TEST_TEXTS)]
    diff = differences(cases)
    assert not diff, f"{len(diff)} of {len(cases)} differ, e.g. " + "; ".join(diff[:3])


@pytest.mark.parametrize("seed", [35, 36, 37])
def test_adversarial_replies_parse_the_same(seed: int) -> None:
    cases = []
    for size in (60, 400, 1500):
        for _, text in adversarial(15, size, seed=seed + size):
            cases += [(text, ("A", "B", "C", "D", "E"), None), (text, ("A", "B", "C", "D", "E"), OPTION_TEXTS)]
    cases += [(text, ("A", "B", "C", "D", "E"), texts) for text in backtracking_shapes(120) for texts in (None, OPTION_TEXTS)]
    rng = random.Random(seed)
    for _ in range(60):  # short mixes meet every rule's edge (a token at the very start or end, ...)
        cases.append((mixed(rng.randint(1, 80), rng), tuple("ABCD"[: rng.randint(2, 4)]), rng.choice([None, OPTION_TEXTS])))
    diff = differences(cases)
    assert not diff, f"{len(diff)} of {len(cases)} differ, e.g. " + "; ".join(diff[:3])


def test_long_adversarial_replies_parse_the_same() -> None:
    """Replies over ``v3_scan._LONG`` are read with bounded steps and indexes: compared here (the old v3
    takes seconds on each of the attack's)."""
    cases = [(text, ("A", "B", "C", "D", "E"), texts) for size in (4_500, 6_000)
             for _, text in adversarial(5, size, seed=size) for texts in (None, OPTION_TEXTS)]
    diff = differences(cases)
    assert not diff, f"{len(diff)} of {len(cases)} differ, e.g. " + "; ".join(diff[:3])


# The shapes that cost the most before the lazy reading (tests/support/parser_inputs.py, bench/parse_v4.py):
# one statement or letter repeated, so that every rule meets thousands of candidates.
REPEATED_UNITS = ["A ", "정답: A 아니라 B ", "A. ", "(A) ", "답 A ", "A\n", "만약 정답: A ", "The answer is A. ", "A입니다. ",
                  "A, ", "A 또는 B ", "Therefore, C. ", "C가 정답입니다. ", "I would choose D. ", '{"answer": "B"} ',
                  "The answer is metformin. ", "B: 오답, C: 정답\n", "정답은 다음과 같습니다.\n**C. 경구 항생제**\n"]


def _long_shapes(size: int, rng: random.Random) -> list[str]:
    out = [(unit * (size // len(unit) + 1))[:size] for unit in REPEATED_UNITS]
    for fill in (" ", "\t", "*", "_", "-", " *", "> ", "#"):  # every fill of blank_runs
        out.append(mixed(size, rng, (fill * 200, fill * 37, "A", "C.", "정답:", "따라서 ", "Option ", "\n", "x")))
    for text in list(out[:10]):  # a different statement inside or after: what the lazy reading must still reach
        cut = rng.randint(0, size)
        out.append(text[:cut] + rng.choice(["\n정답: C\n", " C 또는 D ", "\n정답: C (D)", "**Final answer: E**", " 다시 생각해보니 B"])
                   + text[cut:])
    return out


def test_long_repeated_statements_parse_the_same() -> None:
    """Replies over ``v3_find._LONG`` of one statement or letter repeated, and of long blank runs: the
    lazy final-statement rule (``v3_reading``), the windowed token scans (``v3_find``) and the
    hedges read before and after their indexes (``v3_scan.statement_hedge``) meet them whole."""
    rng = random.Random(42)
    texts = [rng.choice([None, OPTION_TEXTS, TEST_TEXTS]) for _ in range(64)]
    cases = [(text, ("A", "B", "C", "D", "E"), texts[i]) for i, text in enumerate(_long_shapes(4_300, rng))]
    diff = differences(cases)
    assert not diff, f"{len(diff)} of {len(cases)} differ, e.g. " + "; ".join(diff[:3])


def test_line_head_agrees_with_the_whole_line() -> None:
    """What ``startswith`` of an option text sees is the same in the bounded read as in the whole line."""
    rng = random.Random(7)
    pieces = ("A", "b ", "경구 항생제", "수술", " ", "  ", ".", "-", "ﬁ", "①", "Ａ", "ß", "e\u0301", "\u1100\u1161", "İ", "\n", "*" * 90)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 80)))
        if rng.random() < 0.5:  # a long reply: read in bounded steps
            text = "x" * 4_100 + "\n" + text + rng.choice(["", "\n", " A" * 30])
        start = rng.randint(0, len(text))
        need = rng.randint(0, 12)
        end = text.find("\n", start)
        whole = normalise_text(text[start : end if end >= 0 else len(text)])
        head = line_head(text, start, need)
        assert whole.startswith(head) and (len(head) >= need or head == whole), (text, start, need, whole, head)
