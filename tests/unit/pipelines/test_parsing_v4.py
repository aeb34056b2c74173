"""Answer parser v4: each committing style v3 missed, in the ways real models write it, and v3's bounds.

Rows are written in the styles of the models whose replies the held-out sets came from (Qwen,
Llama, Gemma, EXAONE, GPT, Claude, DeepSeek-R1 with its ``<think>`` block, whose final answer after
``</think>`` governs), in Korean, English, Chinese and Japanese, each with the letter a careful
reader takes from it, or None where the reply commits to nothing. Every row with a letter is one
v3 reads as no answer (or, for the rejected-then-final class, as the rejected letter): the test
says so, so a row that v3 already read would not prove anything about v4.
"""

from __future__ import annotations

import pytest

from pipelines.tasks.clinicalqa.parsing.tokens import ParseResult
from pipelines.tasks.clinicalqa.parsing.v3 import parse_answer_v3
from pipelines.tasks.clinicalqa.parsing.v4 import PARSER_VERSION, READ_LIMIT, parse_answer_v4
from pipelines.tasks.clinicalqa.parsing.versions import parser_for

T = {"A": "Ampicillin", "B": "Metformin", "C": "경구 항생제", "D": "수술", "E": "경과 관찰"}
THINK = "<think>\n환자는 발열과 기침이 있고 A도 고려했지만 신기능이 정상이므로 다른 보기가 낫다. 答案可能是A?\n</think>\n\n"

# (class, model style, reply, the letter a careful reader takes, or None)
CLASS_CASES: list[tuple[str, str, str, str | None]] = [
    # answer markers in Chinese and Japanese
    ("zh-ja marker", "Qwen", "根据患者的临床表现和实验室检查结果，最可能的诊断是细菌性肺炎。\n\n答案：C", "C"),
    ("zh-ja marker", "Qwen", "综合分析，正确答案是 B。", "B"),
    ("zh-ja marker", "DeepSeek-R1", "<think>\n患者血糖升高，选项B二甲双胍是一线。但也要考虑D。\n</think>\n\n**最终答案：B**", "B"),
    ("zh-ja marker", "Qwen", "逐项分析：\nA. 不适合\nB. 不适合\n\n故选D。", "D"),
    ("zh-ja marker", "GPT", "最佳答案是 E（经过观察）。", "E"),
    ("zh-ja marker", "Gemma", "この患者は外来治療が可能です。\n\n正解は C です。", "C"),
    ("zh-ja marker", "Claude", "検査所見を総合すると、答え：B", "B"),
    ("zh-ja marker", "Llama", "以上より、解答は【D】となります。", "D"),
    ("zh-ja marker", "Qwen", "C是正确答案，因为患者病情稳定。", "C"),
    ("zh-ja marker", "Gemma", "したがって、Eが正解です。", "E"),
    # Korean ordinal words
    ("ko ordinal", "EXAONE", "환자는 활력징후가 안정적이므로 외래 치료가 가능합니다. 따라서 정답은 세 번째 보기입니다.", "C"),
    ("ko ordinal", "EXAONE", "각 보기를 검토한 결과 두 번째가 정답입니다.", "B"),
    ("ko ordinal", "Qwen", "가장 적절한 것은 다섯 번째 선택지이다.", "E"),
    ("ko ordinal", "Llama", "정답은 첫 번째입니다.", "A"),
    ("ko ordinal", "GPT", "The most appropriate next step is the fourth option.", "D"),
    # a lower-case letter in a Korean committing sentence
    ("ko lower-case", "EXAONE", "종합적으로 판단하면 정답은 c입니다.", "C"),
    ("ko lower-case", "Llama", "따라서 b가 정답이다.", "B"),
    ("ko lower-case", "Gemma", "d를 선택합니다.", "D"),
    # a markdown table with a verdict column and no final line
    ("verdict table", "GPT",
     "| 보기 | 내용 | 판정 |\n|---|---|---|\n| A | Ampicillin | ❌ |\n| B | Metformin | ❌ |\n| C | 경구 항생제 | ✅ |"
     "\n| D | 수술 | ❌ |\n| E | 경과 관찰 | ❌ |", "C"),
    ("verdict table", "Claude",
     "각 보기를 정리하면 다음과 같습니다.\n\n| 선택지 | 판단 | 근거 |\n| --- | --- | --- |\n| A | 오답 | 내성 |\n| B | 정답 | 1차 약제 |"
     "\n| C | 오답 | 효과 없음 |", "B"),
    ("verdict table", "Gemma",
     "| Option | Correct? |\n|:--:|:--:|\n| **A** | X |\n| **B** | X |\n| **C** | X |\n| **D** | O |\n| **E** | X |", "D"),
    # committing sentences beyond v3's templates
    ("committing sentence", "GPT", "The most likely diagnosis is B.", "B"),
    ("committing sentence", "Claude", "Given the hemodynamic instability, the best next step in management is (D).", "D"),
    ("committing sentence", "Llama", "B is the most likely diagnosis.", "B"),
    ("committing sentence", "EXAONE", "외래에서 경구 치료가 가능하므로 C가 가장 적절합니다.", "C"),
    ("committing sentence", "Qwen", "가장 적절한 것은 ③이다.", "C"),
    ("committing sentence", "Claude", "The most appropriate treatment is oral antibiotics (C).", "C"),
    ("committing sentence", "EXAONE", "가장 적절한 치료는 경구 항생제(C)입니다.", "C"),
    ("committing sentence", "Gemma", "最も適切なのはDです。", "D"),
    ("committing sentence", "Qwen", "最合适的治疗是 Metformin。", "B"),
    ("committing sentence", "GPT", "The correct answer here is B, since metformin is first-line.", "B"),
    # answer labels in other brackets or under heading words
    ("label", "Qwen", "### 결론: C", "C"),
    ("label", "Llama", "## Final choice\n\nC. Oral antibiotics, because the patient is stable.", "C"),
    ("label", "EXAONE", "환자 상태를 종합하였다.\n\n【정답】 D", "D"),
    ("label", "GPT", "[Answer] E", "E"),
    ("label", "Gemma", "「正解」B", "B"),
    ("label", "Claude", "Putting the findings together, surgery is indicated.\n\n**D**", "D"),
    ("label", "Qwen", "분석 결과 외래 치료가 적절하다.\n\n【C】", "C"),
    ("label", "DeepSeek-R1", THINK + "患者病情稳定，可门诊治疗。\n\n「C」", "C"),
    # rejected, then the final letter alone on the last line
    ("rejected then final", "Llama",
     "The answer is A, but that is wrong because the culture grew gram-negative rods.\n\nC", "C"),
    ("rejected then final", "EXAONE", "정답은 A라고 생각했지만 틀렸다. 배양 결과를 다시 보면 수술이 필요하다.\n\nD", "D"),
    ("rejected then final", "DeepSeek-R1", THINK + "The answer is B, but that is incorrect given the renal function.\n\nE", "E"),
]

# v3's bounds, in the new styles: hedges, several answers, "none", conditionals, stray letters
BOUND_CASES: list[tuple[str, str, str, str | None]] = [
    ("hedge", "Qwen", "答案可能是B，也可能是C。", None),
    ("hedge", "Gemma", "正解はCかもしれませんが、確信がありません。", None),
    ("hedge", "GPT", "The most likely diagnosis might be B.", None),
    ("several", "Qwen", "答案是B或C。", None),
    ("several", "GPT", "The most likely diagnosis is B or C.", None),
    ("several", "Claude", "| Option | Verdict |\n|---|---|\n| A | ✅ |\n| B | ✅ |\n| C | ❌ |", None),
    ("hedged mark", "Gemma", "| 보기 | 판정 |\n|---|---|\n| A | ❌ |\n| B | △ |\n| C | ✅ |", None),
    ("none", "Claude", "None of the options is correct; the most likely diagnosis is B only if the test was wrong.", None),
    ("none", "EXAONE", "보기 중 정답이 없습니다. 세 번째 보기가 가깝지만 틀렸다.", None),
    ("conditional", "Qwen", "如果患者是儿童，答案是E。", None),
    ("conditional", "GPT", "If the patient were a child, the most appropriate treatment is E.", None),
    ("conditional", "Gemma", "もし妊娠していれば、正解はEです。", None),
    ("stray", "Llama", "두 번째로 흔한 원인은 결핵이다.", None),
    ("stray", "GPT", "vitamin c가 정답과 관련이 있다.", None),
    ("stray", "Qwen", "答案需要结合CT结果。", None),
    ("stray", "Claude", "The most likely organism is E. coli.", None),
    ("stray", "Llama", "A\nB\nC", None),
    ("stray", "GPT", "The answer is A, and the culture confirms it.\n\nC", "A"),  # nothing rejects A
    ("stray", "Claude", "| Step | Finding |\n|---|---|\n| 1 | fever |\n| 2 | cough |", None),
]


def _ids(cases: list[tuple[str, str, str, str | None]]) -> list[str]:
    return [f"{c[0]}/{c[1]}/{c[2][:30]!r}" for c in cases]


@pytest.mark.parametrize(("klass", "model", "text", "letter"), CLASS_CASES, ids=_ids(CLASS_CASES))
def test_new_styles(klass: str, model: str, text: str, letter: str | None) -> None:
    got = parse_answer_v4(text, option_texts=T)
    assert got == ParseResult(letter, "ok"), (klass, model, got)
    v3 = parse_answer_v3(text, option_texts=T)
    if klass == "rejected then final":
        assert v3.prediction not in (None, letter), v3  # v3 gave the rejected letter: a confident wrong one
    else:
        assert v3.prediction is None, v3  # a style v3 did not read


@pytest.mark.parametrize(("klass", "model", "text", "letter"), BOUND_CASES, ids=_ids(BOUND_CASES))
def test_bounds(klass: str, model: str, text: str, letter: str | None) -> None:
    got = parse_answer_v4(text, option_texts=T)
    assert got.prediction == letter, (klass, model, got)
    if letter is not None:
        assert got == parse_answer_v3(text, option_texts=T)


def test_each_class_has_every_language_and_several_models() -> None:
    """The held-out sets mixed languages and models; so do the rows (by class, at least two models)."""
    by_class: dict[str, set[str]] = {}
    for klass, model, _, _ in CLASS_CASES:
        by_class.setdefault(klass, set()).add(model)
    assert all(len(models) >= 2 for models in by_class.values()), by_class
    texts = " ".join(c[2] for c in CLASS_CASES)
    assert all(any(lo <= ch <= hi for ch in texts) for lo, hi in (("가", "힣"), ("一", "鿿"), ("ぁ", "ゟ"), ("a", "z")))
    assert {"Qwen", "Llama", "Gemma", "EXAONE", "GPT", "Claude", "DeepSeek-R1"} <= {c[1] for c in CLASS_CASES}


def test_reasoning_before_think_close_never_counts() -> None:
    """DeepSeek-R1: an answer inside ``<think>`` is not the answer; the one after ``</think>`` is."""
    assert parse_answer_v4("<think>答案是A。</think>\n\n答案是C。") == ParseResult("C", "ok")
    assert parse_answer_v4("<think>答案是A。</think>\n\n잘 모르겠습니다.") == ParseResult(None, "no_answer")


def test_option_texts_are_needed_for_an_answer_by_text_only() -> None:
    assert parse_answer_v4("最合适的治疗是 Metformin。", option_texts=T) == ParseResult("B", "ok")
    assert parse_answer_v4("最合适的治疗是 Metformin。") == ParseResult(None, "no_answer")
    # a bracketed letter whose words name another option's text: the two disagree
    assert parse_answer_v4("The most appropriate treatment is metformin (C).", option_texts=T).prediction is None


def test_registry() -> None:
    assert PARSER_VERSION == "v4" and parser_for("v4") is parse_answer_v4


def test_a_reply_longer_than_any_budget_is_read_from_its_head_and_tail() -> None:
    """Past ``READ_LIMIT`` characters (after the reasoning) v4 reads the first 2,048 and the last
    6,144: the answer a reply ends on, or opens with, still counts; one buried in between does not."""
    filler = "환자의 병력을 검토한다.\n" * 4000  # about 56,000 characters
    assert len(filler) > READ_LIMIT
    assert parse_answer_v4(filler + "정답: C") == ParseResult("C", "ok")
    assert parse_answer_v4("정답: D\n" + filler) == ParseResult("D", "ok")
    assert parse_answer_v4(filler + "정답: B\n" + filler) == ParseResult(None, "no_answer")
    assert parse_answer_v4("<think>" + filler + "</think>\n정답: E") == ParseResult("E", "ok")  # reasoning is not counted
