"""Replies that attack the answer parser's cost, and the demo's ordinary ones: shared by the
corpus-equality test of parser v3 (tests/unit/pipelines/test_parsing_v3_equality.py) and
``bench/parse_adversarial``.

The attack (issue 35) sent long replies made of answer tokens, markers and contrasts: ``"A " * 8000``
took 7.9 s to parse and 16 KB of ``"정답: A 아니라 B "`` 22 s. ``adversarial`` makes those and
seeded random mixes of every piece a parser rule reacts to (markers, tails, labels, negations,
hedges, conditionals, brackets, bold, option texts, line breaks, long blank runs), so that every
rule's scan meets long inputs.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

OPTION_TEXTS = {"A": "Metformin", "B": "Insulin glargine", "C": "경구 항생제", "D": "수술 후 항생제 정맥 주사", "E": "Observation"}

PIECES = (
    "A", "B", "C", "D", "E", "a", "c", "1", "2", "3", "5", "(C)", "**D**", "[B]", "「E」", "3번", "2번째", " ", " ", " ",
    "\n", "\n\n", "\t", ".", ",", ";", ":", "?", "!", "-", "—", "/", "(", ")", "**", "__", "#", "> ", "- ", "* ", "• ",
    "정답: ", "정답은 ", "답: ", "답변: ", "최종 정답: ", "Answer: ", "The answer is ", "Final answer: ", "correct option ",
    " is the answer", " is the correct answer", "가 정답", "이 정답입니다", " 정답", ": 정답", ": 오답", " 오답",
    "아니라 ", "가 아니라 ", "아닙니다", " 아닌 ", "not ", " but ", " or ", " and ", "또는 ", "와 ", "및 ", ", and ",
    "수도 있다", "might be ", "could ", "perhaps ", "? ", "만약 ", "if the patient were a child, ", "일부 교재에서는 ",
    "라고 합니다", "some textbooks say ", "지만 ", "however ", "because ", "따라서 ", "Therefore, ", "그러므로 ",
    "Option ", " is correct.", " is the best answer.", "I would choose ", "I'd go with ", "my final choice is ",
    "가장 적절한 것은 ", "가장 적절한 치료는 ", "를 선택합니다", "을 선택한다", "입니다.", "이다.", "임", "예요",
    '{"answer": "B"}', '"final_answer": "C. 경구 항생제"', "'정답': ['D']", '"answer": [', "\\boxed{C}", "\\boxed{\\text{E}}",
    "다시 생각해보니 ", "정정: ", "wait, ", "On reflection, ", "correction: ", "none of the options ", "정답이 없다 ",
    "정답은 다음과 같습니다.\n", "### 정답\n", "**C. 경구 항생제**", "metformin", "insulin glargine", "경구 항생제",
    "observation", "2 weeks", "4 mg", "5%", "2-3일", "E. coli", "S. aureus", "B-cell", "1.5", "<think>", "</think>",
    "(((( ", "      ", "\u3000", "①", "Ａ",
)


def attack_a(size: int) -> str:
    """The attack's first reply: ``"A "`` repeated."""
    return ("A " * (size // 2 + 1))[:size]


def attack_korean(size: int) -> str:
    """The attack's second reply: ``"정답: A 아니라 B "`` repeated (16 KB took 22 s)."""
    unit = "정답: A 아니라 B "
    return (unit * (size // len(unit) + 1))[:size]


def mixed(size: int, rng: random.Random, pieces: tuple[str, ...] = PIECES) -> str:
    """Random pieces up to ``size`` characters."""
    out: list[str] = []
    n = 0
    while n < size:
        piece = rng.choice(pieces)
        out.append(piece)
        n += len(piece)
    return "".join(out)[:size]


def one_line(size: int, rng: random.Random) -> str:
    """Random pieces on one endless line (no sentence end either): every per-line scan sees it whole."""
    return mixed(size, rng, tuple(p for p in PIECES if not any(c in p for c in "\n.!?。;")))


def blank_runs(size: int, rng: random.Random) -> str:
    """Long runs of blanks and markup between tokens: what backtracking patterns meet at their worst."""
    fill = rng.choice([" ", "\t", "*", "_", "-", " *", "> ", "#"])
    return mixed(size, rng, (fill * 200, fill * 37, "A", "C.", "정답:", "따라서 ", "Option ", "\n", "x"))


def backtracking_shapes(blanks: int) -> list[str]:
    """Replies on which a pattern of the old v3 backtracked cubically: a marker, a long blank or bracket
    run, then something else (2,000 blanks took 18 to 196 s, 4,000 brackets 266 s)."""
    run = " " * blanks
    return ["\n" + run + "x A입니다.", "정답" + run + "x", "Option C is correct" + run + "x", "정답" + "\t" * blanks + "x",
            "Option C is correct" + "\t" * blanks + "x", "정답: A" + "(" * blanks, "A" + "(" * blanks + "x"]


FAMILIES = {
    "attack_a": lambda size, rng: attack_a(size),
    "attack_korean": lambda size, rng: attack_korean(size),
    "mixed": mixed,
    "one_line": one_line,
    "blank_runs": blank_runs,
}


def adversarial(count: int, size: int, seed: int = 35) -> Iterator[tuple[str, str]]:
    """``count`` replies of ``size`` characters: (family, reply), the families in turn."""
    rng = random.Random(seed)
    names = list(FAMILIES)
    for i in range(count):
        name = names[i % len(names)]
        yield name, FAMILIES[name](size, rng)


def demo_replies() -> list[tuple[str, dict[str, str]]]:
    """Every simulated model's reply to every demo item, with that item's option texts (as scoring passes them)."""
    from pipelines.datasets.clinicalqa.demo import demo_clinicalqa_rows
    from pipelines.datasets.clinicalqa.simulated import panel_replies

    rows = demo_clinicalqa_rows()
    texts = {str(r["question_id"]): {k: r["options"][f"option_{k}"].strip() for k in "ABCDE"} for r in rows}
    return [(reply.output, texts[reply.instance_id]) for replies in panel_replies(rows=rows).values() for reply in replies]
