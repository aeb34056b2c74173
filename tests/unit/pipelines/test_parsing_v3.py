"""Answer parser v3: the answer styles v2 read as "no answer", self-corrections, and the bounds.

Each rule has rows written like real model replies (Korean and English), and each bound (hedges,
several answers, "none of the options", a conditional about another case) has rows that must stay
unparsable or keep the committed answer. v3 must give v2's answer on every v1 and v2 table row
(none of them is a self-correction), and on a few thousand generated replies with a known intended
letter it must never return a letter other than the intended one where v2 returned none, nor
differ from v2 where v2 returned a letter, except after a self-correction.
"""

from __future__ import annotations

import random

import pytest
from test_parsing import CASES as V1_CASES
from test_parsing_v2 import NEW_CASES as V2_CASES, OPTION_TEXTS, TEXT_CASES as V2_TEXT_CASES

from pipelines.tasks.clinicalqa.parsing.tokens import ParseResult
from pipelines.tasks.clinicalqa.parsing.v2 import parse_answer_v2
from pipelines.tasks.clinicalqa.parsing.v3 import PARSER_VERSION, SELF_CORRECTION, parse_answer_v3
from pipelines.tasks.clinicalqa.parsing.versions import parse_answer, parser_for

T = OPTION_TEXTS  # A Ampicillin, B Metformin, C 경구 항생제, D 수술, E 경과 관찰

# (reply, expected prediction, expected status), read with the item's option texts
RULE_CASES: list[tuple[str, str | None, str]] = [
    # structured answers: JSON with an answer key, fenced or bare; \boxed{}
    ('{"answer": "B"}', "B", "ok"),
    ('```json\n{\n  "reasoning": "혈당 조절이 우선이며 신기능이 정상이다.",\n  "answer": "B"\n}\n```', "B", "ok"),
    ('Here is my response:\n{"explanation": "The patient has sepsis.", "final_answer": "A"}', "A", "ok"),
    ('```json\n{"정답": "C", "근거": "외래 치료가 가능한 경증 폐렴"}\n```', "C", "ok"),
    ("{'answer': 'E'}", "E", "ok"),
    ('{"answer": "B. Metformin"}', "B", "ok"),
    ('{"answer": "(D)"}', "D", "ok"),
    ('{"answer": ["C"]}', "C", "ok"),
    ('{"final_answer": "경구 항생제"}', "C", "ok"),
    ("Final answer: $\\boxed{D}$", "D", "ok"),
    # committing sentences, English
    ("Option B is correct. Metformin is first-line therapy in type 2 diabetes.", "B", "ok"),
    ("A is incorrect because ampicillin lacks coverage. Option C is the best choice here.", "C", "ok"),
    ("I would choose D because the patient is hemodynamically unstable and needs surgery.", "D", "ok"),
    ("Considering everything, I'd go with C.", "C", "ok"),
    ("After weighing the options, I'll go with option E.", "E", "ok"),
    ("The correct option is D.", "D", "ok"),
    ("The patient is stable and can tolerate oral intake. Therefore, C.", "C", "ok"),
    ("Surgery is not indicated in this setting.\n\nThus, E.", "E", "ok"),
    # committing sentences, Korean
    ("환자는 활력징후가 안정적이며 경구 섭취가 가능하다.\n\nE입니다.", "E", "ok"),
    ("따라서 C입니다.", "C", "ok"),
    ("가장 적절한 것은 C이다.", "C", "ok"),
    ("이 환자에게 가장 적절한 치료는 B입니다.", "B", "ok"),
    ("가장 먼저 시행해야 할 검사는 A이다.", "A", "ok"),
    ("가장 적절한 것은 A가 아니라 D이다.", "D", "ok"),
    ("종합하면 C가 정답으로 판단됩니다.", "C", "ok"),
    ("결론적으로 B가 가장 적절한 답이다.", "B", "ok"),
    ("보기 중 D를 선택합니다.", "D", "ok"),
    ("위 소견을 종합하여 C를 고르겠습니다.", "C", "ok"),
    # an answer by option text, or a bold option line under a heading or a lead-in sentence
    ("정답은 다음과 같습니다.\n\n**C. 경구 항생제**", "C", "ok"),
    ("정답은 다음과 같습니다.\n\n**경구 항생제**\n\n외래에서 치료 가능한 경증이다.", "C", "ok"),
    ("### 최종 답변\n\n**D. 수술**", "D", "ok"),
    ("The answer is as follows:\n\n**B. Metformin**", "B", "ok"),
    ("The answer is metformin.", "B", "ok"),
    ("정답은 경구 항생제입니다.", "C", "ok"),
    ("정답은 다음과 같습니다.\n\n**D. 경구 항생제**", None, "ambiguous"),  # the label and the text disagree
    ("정답은 다음과 같습니다.\n\n**B. Insulin**", None, "no_answer"),  # not this item's option
    ("The answer is metformin, not insulin or ampicillin.", None, "no_answer"),
    # self-corrections: the last committed answer wins, the same way in both languages
    ("정답: A\n\n다시 생각해보니 정답: C", "C", "ok"),
    ("정답: A\n\n잠깐, 다시 생각해 보니 환자가 임신 중이므로 정답은 E입니다.", "E", "ok"),
    ("정답: B\n정정: 신기능 저하가 있으므로 정답은 D입니다.", "D", "ok"),
    ("Answer: A\n\nOn reflection, the answer is C.", "C", "ok"),
    ("Answer: A\nCorrection: the answer is B because the creatinine is normal.", "B", "ok"),
    ("The answer is A. Wait, the culture grew gram-negative rods, so the answer is C.", "C", "ok"),
    ("정답: A\n\n다시 생각해보니 C일 수도 있다.", None, "ambiguous"),
    ("Answer: C\n\nOn reflection, the answer is C.", "C", "ok"),
    ("정답: C\n\n다시 생각해보니 만약 소아라면 정답은 E이다.", "C", "ok"),
]

BOUND_CASES: list[tuple[str, str | None, str]] = [
    # hedges between options
    ("I would choose C or D; both are reasonable.", None, "ambiguous"),
    ("Option B might be correct.", None, "no_answer"),
    ("Therefore, C?", None, "no_answer"),
    ("가장 적절한 것은 C 또는 D이다.", None, "ambiguous"),
    ("C일 수도 있고 D일 수도 있습니다.", None, "no_answer"),
    # several answers
    ('{"answer": ["B", "D"]}', None, "ambiguous"),
    ("B와 D를 선택합니다.", None, "ambiguous"),
    ("Options B and D are correct.", None, "no_answer"),
    # none of the options
    ("None of the options is correct. If forced, I would choose C.", None, "no_answer"),
    ("보기 중 정답이 없습니다. 굳이 고른다면 C를 선택합니다.", None, "no_answer"),
    ('{"answer": null, "reason": "none of the options fits"}', None, "no_answer"),
    # a conditional about another case never displaces a committed answer
    ("If the patient were a child, E.", None, "no_answer"),
    ("I would choose C. If the patient were a child, I would choose E.", "C", "ok"),
    ("가장 적절한 것은 C이다. 만약 소아라면 E를 선택한다.", "C", "ok"),
    ("Answer: C\nIf the patient were pregnant, option E is correct.", "C", "ok"),
    ("만약 임신부라면 E입니다.", None, "no_answer"),
    # never a stray letter
    ("E. coli입니다.", None, "no_answer"),
    ("So, A patient like this needs admission.", None, "no_answer"),
    ("Therefore, 3.", None, "no_answer"),
    ('{"answer": 2}', None, "no_answer"),  # a JSON index may count from 0
    ("C입니다만, 확실하지 않습니다.", None, "no_answer"),
    ("정답을 고르기 위해 각 보기를 검토하면 다음과 같습니다:\n- **A. Ampicillin**: 내성 가능성", None, "no_answer"),
    ("The answer is metformin-induced lactic acidosis.", None, "no_answer"),
    ("I would not choose A.", None, "no_answer"),
]


def _ids(cases: list[tuple[str, str | None, str]]) -> list[str]:
    return [repr(c[0])[:50] for c in cases]


@pytest.mark.parametrize(("text", "prediction", "status"), RULE_CASES, ids=_ids(RULE_CASES))
def test_rules(text: str, prediction: str | None, status: str) -> None:
    assert parse_answer_v3(text, option_texts=T) == ParseResult(prediction, status)  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "prediction", "status"), BOUND_CASES, ids=_ids(BOUND_CASES))
def test_bounds(text: str, prediction: str | None, status: str) -> None:
    assert parse_answer_v3(text, option_texts=T) == ParseResult(prediction, status)  # type: ignore[arg-type]


def test_the_audit_replies_v2_missed() -> None:
    """The audit's replies: v2 read each as no answer (or the withdrawn A); v3 reads the intended letter."""
    audit = {
        '{"answer": "B"}': "B", '```json\n{"answer": "B"}\n```': "B", "Option B is correct.": "B",
        "I would choose D because the lactate is rising.": "D", "Therefore, C.": "C", "E입니다.": "E",
        "가장 적절한 것은 C이다.": "C", "정답은 다음과 같습니다.\n\n**C. 경구 항생제**": "C",
        "정답: A\n\n추가 설명...\n\n다시 생각해보니 정답: C": "C",
    }
    for text, letter in audit.items():
        assert parse_answer_v2(text, option_texts=T).prediction != letter, text
        assert parse_answer_v3(text, option_texts=T) == ParseResult(letter, "ok"), text


def test_self_correction_reads_alike_in_both_languages() -> None:
    korean = parse_answer_v3("정답: A\n\n다시 생각해보니 정답: C")
    english = parse_answer_v3("Answer: A\n\nOn reflection, Answer: C")
    assert korean == english == ParseResult("C", "ok")


ALL_V2_CASES = V1_CASES + V2_CASES


@pytest.mark.parametrize(("text", "prediction", "status"), ALL_V2_CASES, ids=_ids(ALL_V2_CASES))
def test_v2_cases_read_as_v2(text: str, prediction: str | None, status: str) -> None:
    """Every v1/v2 table row reads as under v2 (no row is a self-correction), with and without option texts."""
    if SELF_CORRECTION.search(text) and parse_answer_v2(text) != ParseResult(prediction, status):  # type: ignore[arg-type]
        pytest.fail(f"a v2 row that is a self-correction changed: {text!r}")
    assert parse_answer_v3(text) == parse_answer_v2(text)
    assert parse_answer_v3(text, option_texts=T) == parse_answer_v2(text, option_texts=T)


@pytest.mark.parametrize(("text", "prediction", "status"), V2_TEXT_CASES, ids=_ids(V2_TEXT_CASES))
def test_v2_option_text_cases_read_as_v2(text: str, prediction: str | None, status: str) -> None:
    assert parse_answer_v3(text, option_texts=T) == ParseResult(prediction, status)  # type: ignore[arg-type]


def test_registry() -> None:
    assert PARSER_VERSION == "v3" and parser_for("v3") is parse_answer_v3
    assert parse_answer("Therefore, C.", ("A", "B", "C", "D", "E"), "v3") == ParseResult("C", "ok")
    assert parse_answer("The answer is metformin.", ("A", "B", "C", "D", "E"), "v3", T) == ParseResult("B", "ok")


# -- generated replies ---------------------------------------------------------------------------

LETTERS = "ABCDE"
REASONING = [
    "환자는 67세 남성으로 3일 전부터 발열과 기침이 있었다.", "The patient is a 54-year-old woman with 2 weeks of fatigue.",
    "검사 소견상 백혈구 14,000/μL, CRP 8.2 mg/dL이다.", "Her creatinine is 1.1 mg/dL and lactate is 4 mmol/L.",
    "E. coli가 가장 흔한 원인균이다.", "H. pylori infection should be considered.",
    "1. 활력징후를 확인한다.\n2. 수액을 투여한다.", "Step 1: assess the airway. Step 2: give oxygen.",
]
DISTRACTORS = [  # mention another option without committing to it ({o}: not the intended letter)
    "만약 환자가 소아였다면 {o}를 선택했을 것이다.", "If the patient were pregnant, {o} would be preferred.",
    "If the patient were a child, I would choose {o}.", "만약 소아라면 {o}입니다.",
    "{o}는 이 환자에게 적절하지 않다.", "{o} is less likely given the normal troponin.", "{o}: 오답",
    "{o}는 정답이 아닙니다.", "Option {o} is incorrect because of the allergy.", "일부 교재에서는 {o}가 정답이라고 합니다.",
]
V3_STYLES = [  # commit to {x}
    '{{"answer": "{x}"}}', '```json\n{{"reasoning": "...", "answer": "{x}"}}\n```', "{{'final_answer': '{x}'}}",
    "Option {x} is correct.", "I would choose {x} because it treats the cause.", "I'd go with {x}.", "Therefore, {x}.",
    "{x}입니다.", "따라서 {x}입니다.", "가장 적절한 것은 {x}이다.", "가장 적절한 치료는 {x}입니다.", "{x}를 선택합니다.",
    "{x}가 정답으로 판단됩니다.", "정답은 다음과 같습니다.\n\n**{x}. {t}**", "정답은 다음과 같습니다.\n\n**{t}**",
    "The answer is {t}.", "정답은 {t}입니다.",
]
V2_STYLES = ["정답: {x}", "The answer is {x}.", "**Answer:** {x}", "{x}가 정답입니다.", "최종 정답: ({x})", "\\boxed{{{x}}}"]
UNCOMMITTED = [  # no single committed answer: {x} and {o} both named, or none
    "I would choose {x} or {o}.", "{x}일 수도 있고 {o}일 수도 있습니다.", "None of the options is correct.",
    "보기 중 정답이 없습니다.", "If the patient were a child, {x}.", "Option {x} might be correct.", "정답: {x} 또는 {o}",
]
CORRECTIONS = ["다시 생각해보니 정답: {x}", "On reflection, the answer is {x}.", "정정: 정답은 {x}입니다.", "Correction: {x}입니다."]


def _generated(n: int, seed: int = 20261029) -> list[tuple[str, str | None, bool]]:
    """(reply, intended letter or None, is a self-correction), in realistic mixes of styles."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        x = rng.choice(LETTERS)
        o = rng.choice([c for c in LETTERS if c != x])
        parts = rng.sample(REASONING, rng.randint(0, 3))
        parts += [d.format(o=o) for d in rng.sample(DISTRACTORS, rng.randint(0, 2))]
        rng.shuffle(parts)
        kind = rng.random()
        fill = {"x": x, "o": o, "t": OPTION_TEXTS[x]}
        if kind < 0.5:
            answer, intended, corrected = rng.choice(V3_STYLES).format(**fill), x, False
        elif kind < 0.7:
            answer, intended, corrected = rng.choice(V2_STYLES).format(**fill), x, False
        elif kind < 0.85:
            answer, intended, corrected = rng.choice(UNCOMMITTED).format(**fill), None, False
        else:
            answer = f"정답: {o}\n\n" + rng.choice(CORRECTIONS).format(**fill)
            intended, corrected = x, True
        tail = [d.format(o=o) for d in rng.sample(DISTRACTORS[:4], rng.randint(0, 1))]  # conditionals after it
        out.append(("\n\n".join(parts + [answer] + tail), intended, corrected))
    return out


def test_generated_replies_never_get_a_confident_wrong_letter() -> None:
    cases = _generated(3000)
    read = 0
    for text, intended, corrected in cases:
        v2 = parse_answer_v2(text, option_texts=T)
        v3 = parse_answer_v3(text, option_texts=T)
        if corrected:
            assert v3 == ParseResult(intended, "ok"), text
        elif v2.prediction is not None:
            assert v3 == v2, text  # v3 never displaces a letter v2 read
        else:
            assert v3.prediction in (None, intended), text  # where v2 read none: the intended letter or none
            if intended is None:
                assert v3.prediction is None, text
        read += v3.prediction == intended and intended is not None
    committed = sum(1 for _, intended, _ in cases if intended is not None)
    assert read >= 0.95 * committed  # the rules do read the styles they are for
