"""The answer parser v1 on hard cases: each row is (reply, expected prediction, expected status)."""

from __future__ import annotations

import pytest

from pipelines.tasks.clinicalqa.parsing.tokens import ParseResult
from pipelines.tasks.clinicalqa.parsing.v1 import PARSER_VERSION, parse_answer_v1 as parse_answer

CASES: list[tuple[str, str | None, str]] = [
    # Korean markers
    ("정답: C", "C", "ok"),
    ("정답은 (C)입니다", "C", "ok"),
    ("답: 3번", "C", "ok"),
    ("최종 정답: E", "E", "ok"),
    ("정답 : 4", "D", "ok"),
    ("답변: B", "B", "ok"),
    ("정답은 C번입니다.", "C", "ok"),
    ("정답은 아마 C일 것입니다.", "C", "ok"),
    ("### 정답\n\n**B**", "B", "ok"),
    ("따라서 C가 정답입니다.", "C", "ok"),
    ("3번이 답이다.", "C", "ok"),
    ("B가 정답일 가능성이 높다.", "B", "ok"),
    # English markers
    ("The answer is B", "B", "ok"),
    ("**Answer:** C", "C", "ok"),
    ("Final answer: ④", "D", "ok"),
    ("ANSWER: D", "D", "ok"),
    ("Final Answer: (A)", "A", "ok"),
    ("The answer is (E) since the culture grew gram-negative rods.", "E", "ok"),
    ("B is the correct answer.", "B", "ok"),
    ("The correct option is D.", "D", "ok"),
    ("answer: c", "C", "ok"),
    # never a stray letter
    ("The answer is B, a beta-lactam antibiotic.", "B", "ok"),
    ("E. coli가 가장 흔한 원인균이므로 경구 항생제가 적절하다. 정답은 (C)", "C", "ok"),
    ("The answer is a bacterial infection.", None, "no_answer"),
    ("The answer is B-cell lymphoma.", None, "no_answer"),
    ("정답은 A형 간염이다.", None, "no_answer"),
    ("E. coli", None, "no_answer"),
    ("Answer: E. coli infection", None, "no_answer"),
    ("The answer is a", None, "no_answer"),
    ("answer is b", None, "no_answer"),
    ("Answer: **e**", "E", "ok"),
    # digits, circled digits, 번, brackets, quotes, bold, full-width forms
    ("Final answer: ①", "A", "ok"),
    ("답: ②번", "B", "ok"),
    ("정답: Ⓑ", "B", "ok"),
    ("정답: 【D】", "D", "ok"),
    ("정답: [A]", "A", "ok"),
    ("정답: 'B'", "B", "ok"),
    ("정답: “B”", "B", "ok"),
    ("**정답: C**", "C", "ok"),
    ("정답은 **C. 경구 항생제**입니다", "C", "ok"),
    ("정답：Ｃ", "C", "ok"),
    ("정답은 ３번", "C", "ok"),
    ("정답: (C) 경구 항생제", "C", "ok"),
    ("정답: C) 경구 항생제", "C", "ok"),
    ("정답: C (C. 경구 항생제)", "C", "ok"),
    # numbers that are not options
    ("정답: 2가지 모두", None, "no_answer"),
    ("정답은 5mg입니다", None, "no_answer"),
    ("정답: 1.5 mg", None, "no_answer"),
    ("정답: 3일", None, "no_answer"),
    ("정답: 6번", None, "no_answer"),
    ("Answer: F", None, "no_answer"),
    # think blocks naming other options
    ("<think>A인가? 아니 B일까... 정답: A</think>\n정답: D", "D", "ok"),
    ("<think>Let me think. The answer is A.</think>", None, "no_answer"),
    ("고민해보면 B가 맞다. 정답: B</think>\n\n정답: E", "E", "ok"),
    ("<think>정답: C인 것 같은데 출력이 잘", None, "no_answer"),
    ("<THINK>\nanswer is A\n</THINK>\nThe answer is C", "C", "ok"),
    # hedged answers and several statements
    ("답은 A일 수도 있지만, 검사 소견을 보면 급성 심근경색이 맞다.\n정답: C", "C", "ok"),
    ("정답: C\n해설: 답이 A라고 생각할 수도 있으나 심전도 소견이 맞지 않는다.", "C", "ok"),
    ("정답은 C일 수도 있고 D일 수도 있다.", None, "ambiguous"),
    ("정답: C\n정답: D", "D", "ok"),
    ("Answer: A and B are both wrong; the answer is C", "C", "ok"),
    ("정답: C입니다. 다만 D도 고려할 수 있다.", "C", "ok"),
    ("A가 정답일 수도 있지만, 소견을 보면 아니다. 정답: C", "C", "ok"),
    ("정답: B\n\n따라서 답은 B 또는 C?", None, "ambiguous"),
    ("D가 정답일까? 아니다. C가 정답이다.", "C", "ok"),
    # negation
    ("정답은 A가 아니라 C이다.", "C", "ok"),
    ("정답: C\n\n해설: A는 답이 아니다. 대동맥 박리는 흉통의 양상이 다르다.", "C", "ok"),
    # two different answers in the final statement
    ("정답: B 또는 C", None, "ambiguous"),
    ("The answer is B or C.", None, "ambiguous"),
    ("정답: B/D", None, "ambiguous"),
    ("정답: B, D", None, "ambiguous"),
    ("정답은 B와 D입니다", None, "ambiguous"),
    ("정답: (B) 또는 (D)", None, "ambiguous"),
    ("정답: C (또는 D)", None, "ambiguous"),
    # explanations after the answer
    ("정답: B\n설명: 심전도가 가장 먼저 시행할 검사이다.", "B", "ok"),
    ("Answer: A\nExplanation: The answer cannot be E because the patient is afebrile.", "A", "ok"),
    ("Answer: C.\nthe other options do not treat the infection.", "C", "ok"),
    # a bare single option as the whole reply
    ("C", "C", "ok"),
    ("(C)", "C", "ok"),
    ("**C**", "C", "ok"),
    ("3", "C", "ok"),
    ("③", "C", "ok"),
    ("C.", "C", "ok"),
    ("  3번\n", "C", "ok"),
    ("c", "C", "ok"),
    ("C. 경구 항생제", None, "no_answer"),
    # nothing to read
    ("정답: 모르겠습니다", None, "no_answer"),
    ("I cannot determine the answer.", None, "no_answer"),
    ('마지막 줄에 "정답: X" 형식으로 답하세요.', None, "no_answer"),
    ("", None, "empty"),
    ("   \n\t ", None, "empty"),
]


@pytest.mark.parametrize(("text", "prediction", "status"), CASES, ids=[repr(c[0])[:50] for c in CASES])
def test_parse_table(text: str, prediction: str | None, status: str) -> None:
    assert parse_answer(text) == ParseResult(prediction, status)  # type: ignore[arg-type]


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 40


def test_digits_follow_the_option_count() -> None:
    four = ("A", "B", "C", "D")
    assert parse_answer("정답: 4", four) == ParseResult("D", "ok")
    assert parse_answer("정답: 5", four) == ParseResult(None, "no_answer")
    assert parse_answer("정답: E", four) == ParseResult(None, "no_answer")


def test_none_is_empty() -> None:
    assert parse_answer(None) == ParseResult(None, "empty")


def test_version() -> None:
    assert PARSER_VERSION == "v1"
