"""How each simulated LLM of the demo panel writes its replies (``simulated.py`` decides what it answers).

Why a writer per style: the demo board must show what a real board shows, and on a real board the
same knowledge written differently is read differently by the answer parser. Each writer takes the
demo item, the letter the model commits to (None: it commits to nothing) and a seeded generator,
and returns ``(reply, intended)``: the reply text and the letter a correct parser reads from it
(None where the reply is a hedge or declines, which counts as wrong). The phrasings are the kinds
seen in real replies: a bare letter, Korean step-by-step reasoning ending in ``정답: X``, a markdown
answer section, English sentences ("The correct option is D.", "Option B is correct."), JSON
objects (fenced or bare), explicit self-corrections in Korean and English, hedges between two
options, and the short Korean endings of small models ("E입니다.", "가장 적절한 것은 C이다.", a bold
option line under ``정답은 다음과 같습니다.``). Reasoning never names an option letter other than the
answer, so the letter a reply commits to is unambiguous to a human reader.

``NEEDS`` records, per style, the first parser version that reads every reply of it as intended:
the styles of v2's known misses (JSON, committing sentences, ``X입니다``, self-corrections) need v3.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

LETTERS = ("A", "B", "C", "D", "E")

Writer = Callable[[dict, "str | None", random.Random], "tuple[str, str | None]"]


def _final_consonant(word: str) -> bool:
    """Whether the last Hangul syllable of ``word`` has a final consonant (이/가, 은/는, 을/를)."""
    for ch in reversed(word):
        if "가" <= ch <= "힣":
            return (ord(ch) - 0xAC00) % 28 != 0
        if ch.isdigit() or ch.isalpha():
            return ch in "013678LMNlmn"  # spoken endings: 영/일/삼/육/칠/팔, -엘/-엠/-엔
    return False


def josa(word: str, with_batchim: str, without: str) -> str:
    return word + (with_batchim if _final_consonant(word) else without)


def _text(item: dict, letter: str) -> str:
    return item["options"][f"option_{letter}"]


def _other(item: dict, letter: str, rng: random.Random) -> str:
    """A letter other than ``letter`` (a distractor the reasoning weighs)."""
    return rng.choice([x for x in LETTERS if x != letter])


def _finding(item: dict) -> str:
    exam = item.get("exam") or ""
    return exam.split(", ")[-1] if exam else item["chief_complaint"]


def terse(item: dict, letter: str | None, rng: random.Random) -> tuple[str, str | None]:
    assert letter is not None
    form = rng.random()
    if form < 0.8:
        return letter, letter
    if form < 0.9:
        return f"{letter}.", letter
    return f"정답: {letter}", letter


def _korean_steps(item: dict, letter: str, rng: random.Random) -> list[str]:
    chosen, other = _text(item, letter), _text(item, _other(item, letter, rng))
    return [
        f"주소는 {item['chief_complaint']}이며, 묻는 것은 {item['purpose']}입니다.",
        f"핵심 소견은 '{_finding(item)}'입니다.",
        f"{josa(other, '은', '는')} 이 임상 양상과 맞지 않습니다.",
        f"제시된 소견을 종합하면 {josa(chosen, '이', '가')} 가장 부합합니다.",
    ]


def reasoning_ko(item: dict, letter: str | None, rng: random.Random) -> tuple[str, str | None]:
    assert letter is not None
    steps = _korean_steps(item, letter, rng)
    body = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))
    return f"문제를 단계적으로 풀어보겠습니다.\n\n{body}\n\n정답: {letter}", letter


def markdown_ko(item: dict, letter: str | None, rng: random.Random) -> tuple[str, str | None]:
    assert letter is not None
    steps = _korean_steps(item, letter, rng)
    body = "\n".join(f"- {s}" for s in steps)
    return f"### 풀이\n\n{body}\n\n### 정답\n\n**{letter}**", letter


def english(item: dict, letter: str | None, rng: random.Random) -> tuple[str, str | None]:
    assert letter is not None
    lead = rng.choice((
        "The key finding is the presentation with the listed exam results.",
        "Considering the history and the examination findings together,",
        "This is a classic presentation once the findings are put together.",
        "Let me weigh the options against the clinical picture.",
    ))
    close = rng.choice((
        f"The correct option is {letter}.",
        f"Option {letter} is correct.",
        f"I would choose {letter} because it best explains the findings.",
        f"Therefore, {letter}.",
        f"Answer: {letter}",
    ))
    return f"{lead}\n\n{close}", letter


def json_answer(item: dict, letter: str | None, rng: random.Random) -> tuple[str, str | None]:
    assert letter is not None
    form = rng.randrange(4)
    if form == 0:
        return json.dumps({"answer": letter}), letter
    if form == 1:
        body = json.dumps({"answer": letter, "confidence": round(rng.uniform(0.55, 0.95), 2)})
        return f"```json\n{body}\n```", letter
    if form == 2:
        why = f"{josa(_text(item, letter), '이', '가')} 임상 양상에 가장 부합함"
        body = json.dumps({"reasoning": why, "final_answer": letter}, ensure_ascii=False, indent=2)
        return f"```json\n{body}\n```", letter
    return json.dumps({"정답": letter, "근거": f"{item['chief_complaint']} 환자의 소견"}, ensure_ascii=False), letter


def self_correcting(item: dict, letter: str | None, rng: random.Random) -> tuple[str, str | None]:
    """About a third of replies commit, then revise; the last committed answer is the reply's answer."""
    assert letter is not None
    if rng.random() >= 0.35:
        return reasoning_ko(item, letter, rng)
    first = _other(item, letter, rng)
    if rng.random() < 0.6:
        reply = (f"정답: {first}\n\n다시 생각해보니 {_finding(item)} 소견을 고려하면 "
                 f"{_text(item, first)}보다는 {josa(_text(item, letter), '이', '가')} 더 적절합니다.\n\n정답: {letter}")
    else:
        reply = (f"Answer: {first}\n\nOn reflection, the findings fit the other option better.\n\n"
                 f"Correction: the answer is {letter}.")
    return reply, letter


def hedging(item: dict, letter: str | None, rng: random.Random) -> tuple[str, str | None]:
    """``letter`` None: the model does not commit (a hedge between two options, or no option)."""
    if letter is not None:
        return f"{josa(_text(item, letter), '이', '가')} 가장 가능성이 높아 보입니다.\n\n정답: {letter}", letter
    a, b = sorted(rng.sample(LETTERS, 2))
    form = rng.randrange(3)
    if form == 0:
        return f"{a}와 {b} 모두 가능성이 있어 하나로 정하기 어렵습니다. 추가 병력이 필요합니다.\n\n정답: {a} 또는 {b}", None
    if form == 1:
        return f"The answer is either {a} or {b}; more history would be needed to decide.", None
    return "제시된 보기 중에는 적절한 답이 없는 것 같습니다. 추가 정보가 필요합니다.", None


def small_ko(item: dict, letter: str | None, rng: random.Random) -> tuple[str, str | None]:
    assert letter is not None
    form = rng.randrange(4)
    if form == 0:
        return f"{letter}입니다.", letter
    if form == 1:
        return f"가장 적절한 것은 {letter}이다.", letter
    if form == 2:
        return f"정답은 다음과 같습니다.\n\n**{letter}. {_text(item, letter)}**", letter
    return f"{letter}가 정답입니다.", letter


STYLES: dict[str, Writer] = {
    "terse": terse, "reasoning_ko": reasoning_ko, "markdown_ko": markdown_ko, "english": english,
    "json": json_answer, "self_correcting": self_correcting, "hedging": hedging, "small_ko": small_ko,
}
NEEDS: dict[str, str] = {
    "terse": "v2", "reasoning_ko": "v2", "markdown_ko": "v2", "hedging": "v2",
    "english": "v3", "json": "v3", "self_correcting": "v3", "small_ko": "v3",
}
