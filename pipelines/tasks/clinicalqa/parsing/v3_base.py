"""v2's answer statements, as parser v3 reads them: v3's own reimplementation, never a call into frozen v2.

v3 reads a reply exactly as v2 did wherever v2 found an answer, an ambiguity or nothing at all
(``parsing.v3``). v2 (``parsing.v2``) scored published results, so it is frozen; v3 once called its
entry point, which made v3 inherit its cost (2.2 s for ``"A " * 8000``) and tied a live version to a
frozen one. This module is that reading, rule for rule (the docstring of ``parsing.v2`` lists them:
line-anchored markers, filler within a line, label lines, negations, conditionals, quantities,
number-letter disagreements, labels with option texts, ``\\boxed{}``), on v3's scanner
(``parsing.v3_scan``), with the same answers: ``tests/unit/pipelines/test_parsing_v3_equality.py``
compares it, through v3, with a frozen copy of the v3 that called v2, on the demo's outputs, every
parser test and generated adversarial replies.

What differs is only the work: each statement finder lists its candidates (a marker, a token a
tail follows, a label line's start) with one regular-expression scan, and reads one (a token, its
negation, lists and hedges) only when ``parsing.v3_reading``'s final-statement rule asks for it, so
a reply costs time near linear in its length with a small factor (docs/adding-a-task.md, "Answer
parsing").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Mapping

from pipelines.tasks.clinicalqa.parsing.tokens import (
    FILLER,
    HEDGE_ALTERNATIVE_TAIL,
    POSTFIX_ENGLISH,
    PREFIX_MARKER,
)
from pipelines.tasks.clinicalqa.parsing.v3_find import (
    PREFIX_MARKER_KEYS,
    Anchor,
    may_hold,
    scan,
    token_pattern,
    tokens_followed_by,
)
from pipelines.tasks.clinicalqa.parsing.v3_scan import (
    Token,
    sentence_rest,
    statement_hedge,
    token_at,
)

_NEGATIONS = "아(?:니|닌|닙|님|닐|냐|녜)"
# A blank run before something that cannot start with a blank is possessive below (``[ \t]*+``): the
# same matches, where the backtracking form took the square (or the cube) of a long blank run's length.
_NEGATION_AFTER = re.compile(
    rf"[ \t]*+(?:가|이|은|는)?[ \t]*+(?:{_NEGATIONS}|오답|틀[리린렸려])|\s+(?:is|are)\s+(?:not|wrong|incorrect)\b|\s*isn't\b",
    re.IGNORECASE,
)
_CONJUNCTION = re.compile(  # v1's, plus ", and" / ", or" of a list
    r"\s*+[(\[]?\s*+(?:,\s*(?:and|or)\b|,|/|&|\+|또는|혹은|아니면|이거나|거나|이나|나|와|과|및|\bor\b|\band\b)\s*",
    re.IGNORECASE,
)
_CONTRAST = re.compile(r"[ \t]*+(?:가|이|은|는)?[ \t]*+아(?:니라|니고|닌)[ \t]*[,]?[ \t]*")
_EN_NOT = re.compile(r"(?:not|isn't|is\s+not)\s+", re.IGNORECASE)
_EN_CONTRAST = re.compile(
    r"\s*[,;.]?\s*(?:but\s+(?:rather\s+)?(?:it\s+is\s+|it's\s+)?|rather\s+|instead\s+|it\s+is\s+|it's\s+|it\s+was\s+)"
    r"(?:option\s+|choice\s+)?",
    re.IGNORECASE,
)
_GROUP_NEGATED = re.compile(
    rf"\s*(?:are|is)\s+(?:both\s+|all\s+)?(?:wrong|incorrect|not\b|false)"
    rf"|[ \t]*+(?:는|은|이|가)?[ \t]*+(?:모두\s*|둘\s*다\s*)?(?:오답|틀[리린렸]|{_NEGATIONS})",
    re.IGNORECASE,
)
_POSTFIX_KOREAN = re.compile(
    rf"\s*(?:가|이|은|는)?\s*(?:최종\s*)?(?:정답|답)(?!\s*(?:이|가|은|는)?\s*{_NEGATIONS})"
    r"(?:이다|입니다|임|이에요|예요|이며|이고|이므로|이라|일|(?![가-힣]))"
)
_LABEL_TAIL = re.compile(
    rf"(?:[ \t]*[-–—:=→|][ \t]*|(?:가|이|은|는)?[ \t]*)(?:\*\*)?(?:최종\s*)?(?<![가-힣])(?:정답|답)(?:\*\*)?"
    rf"(?!\s*(?:이|가|은|는)?\s*{_NEGATIONS})(?:이다|입니다|임|이에요|예요|(?![가-힣]))"
    r"|(?P<en_sep>[ \t]*[-–—(][ \t]*)?(?:\*\*)?(?<![A-Za-z])(?:the\s+)?correct(?:\s+(?:answer|option|choice))?\b(?:\*\*)?",
    re.IGNORECASE,
)
_LABEL_TAIL_END = re.compile(r"[ \t]*(?:$|\n|[.!,;:()\-–—*])")
_BETWEEN_SENTENCE_END = re.compile(r"[.!?。;](?:\s|$)")
_LINE_START = re.compile(r"^[ \t]*(?:[-*•+][ \t]+)?(?:#+[ \t]*)?", re.MULTILINE)
_ANCHOR_PREFIX = re.compile(r"[ \t>#*_\-•+]*(?:(?:the\s+)?(?:final|correct|best)[ \t]+)?(?:\*\*|__)?", re.IGNORECASE)
_BULLET_AFTER_BREAK = re.compile(r"\n[ \t]*(?:[-•+–—]|\*(?!\*))")
_ALONE_ON_LINE = re.compile(r"[ \t]*+[.!。]?[ \t]*+(?:\*\*|__)?[ \t]*+(?:\n|$)")
_BOXED = re.compile(r"\\boxed\s*\{\s*(?:\\(?:text|textbf|mathrm|mathbf)\s*\{\s*)?")
_INLINE_ITEM = re.compile(r"[,;][ \t]*")  # "A: 오답, B: 오답, C: 정답"
_LABEL_MARK_SPACE = re.compile(r"[ \t]*[.):\-–—]?[ \t]*")
_LABEL_AFTER = re.compile(r"[ \t]*[.):][ \t]*\S")
_SPACES = re.compile(r"[ \t]*")
_SPACE_THEN_WORD = re.compile(r"[ \t]+[^\s(]")
_CLOSING_BRACE = re.compile(r"\s*\}")
_TAIL_WORD = re.compile(r"답|correct", re.IGNORECASE)  # every label tail holds one
# Where a postfix tail can start: blanks, a particle, 최종 or 정 before its 답; blanks before "is ... answer".
_POSTFIX_ANCHORS = (
    Anchor(re.compile("답"), r"\s가이은는최종정"),
    Anchor(re.compile(r"i(?=s\s+(?:the\s+)?(?:(?:correct|right|best|final)\s+)?answer\b)", re.IGNORECASE), r"\s"),
)


@dataclass(frozen=True)
class _Statement:
    position: int
    prediction: str | None  # None when ambiguous
    alternatives: frozenset[str] = frozenset()  # the options an ambiguous statement names
    hedged: bool = False
    hedge_alternatives: bool = False
    anchored: bool = False


def _ambiguous(position: int, names: set[str], anchored: bool) -> _Statement:
    return _Statement(position, None, alternatives=frozenset(names), anchored=anchored)


def _statement_from(
    text: str,
    token: Token,
    position: int,
    options: tuple[str, ...],
    texts: Mapping[str, str] | None,
    anchored: bool = False,
    rest_from: int | None = None,
) -> _Statement | None:
    """Build a statement from its first answer token: negation, conjunction, disagreement, hedging."""
    if _NEGATION_AFTER.match(text, token.end):
        contrast = _CONTRAST.match(text, token.end)
        replacement = token_at(text, contrast.end(), options, option_texts=texts) if contrast else None
        if replacement is None:
            return None
        token = replacement
    if token.conflict is not None:
        return _ambiguous(position, {token.value, token.conflict}, anchored)
    named, end = {token.value}, token.end
    for _ in options:  # a list names at most every option once
        conj = _CONJUNCTION.match(text, end)
        other = token_at(text, conj.end(), options) if conj else None
        if other is None:
            break
        named.add(other.value)
        end = other.end
    if len(named) > 1:
        if _GROUP_NEGATED.match(text, end):
            return None  # "A and B are both wrong", "A, B와 C는 오답"
        return _ambiguous(position, named, anchored)
    gap = _SPACES.match(text, token.end).end() - token.end
    if text[token.end + gap : token.end + gap + 1] in ("(", "["):
        other = token_at(text, token.end + gap, options)
        if other is not None and other.value != token.value:
            return _ambiguous(position, {token.value, other.value}, anchored)
    rest = sentence_rest(text, token.end if rest_from is None else rest_from)
    hedge = statement_hedge(text, position, token.end if rest_from is None else rest_from)
    if hedge == "void":
        return None
    alternatives = False
    if hedge == "soft":
        for m in token_pattern(options).finditer(rest):
            other = token_at(rest, m.start(), options)
            if other is not None and other.value != token.value and HEDGE_ALTERNATIVE_TAIL.match(rest, other.end):
                alternatives = True
                break
    return _Statement(position, token.value, hedged=hedge == "soft", hedge_alternatives=alternatives, anchored=anchored)


def _written_as_digit(text: str, token: Token) -> bool:
    """Was the token written as a plain digit (``1``, ``(1)``), not as a letter or with ``번``?"""
    raw = text[token.start : token.end]
    return "번" not in raw and any(c.isdigit() for c in raw)


# A statement's position, whether a marker there opens its line, and what its finder's reader needs.
Candidate = tuple[int, bool, Any]
Reader = Callable[[str, Candidate, tuple[str, ...], "Mapping[str, str] | None"], "_Statement | None"]


def _prefix_candidates(text: str, options: tuple[str, ...]) -> list[Candidate]:
    """Each answer marker: its position, whether only markup precedes it on its line, and the match."""
    out: list[Candidate] = []
    line_end = -1  # where the line of the last marker that was the first of its line ends
    for marker in scan(PREFIX_MARKER, text, PREFIX_MARKER_KEYS):
        start = marker.start()
        if start <= line_end:  # a later marker of a line has the first one before it, which is no markup
            out.append((start, False, marker))
            continue
        line_start = text.rfind("\n", 0, start) + 1
        line_end = _line_end(text, start)
        out.append((start, _ANCHOR_PREFIX.fullmatch(text, line_start, start) is not None, marker))
    return out


def _prefix_one(text: str, candidate: Candidate, options: tuple[str, ...], texts: Mapping[str, str] | None) -> _Statement | None:
    _, anchored, marker = candidate
    filler = FILLER.match(text, marker.end())
    gap = filler.group()
    if _BULLET_AFTER_BREAK.search(gap):
        return None
    response_header = "답변" in marker.group()  # "답변:" also heads a whole reasoning reply
    pos = filler.end()
    negated = _EN_NOT.match(text, pos)
    if negated:
        excluded = token_at(text, negated.end(), options)
        contrast = _EN_CONTRAST.match(text, excluded.end) if excluded else None
        token = token_at(text, contrast.end(), options, option_texts=texts) if contrast else None
    else:
        plain_lower = any(c in gap for c in ":=")
        token = token_at(text, pos, options, plain_lower=plain_lower, after_marker=True, option_texts=texts)
    if token is None:
        return None
    alone = _ALONE_ON_LINE.match(text, token.end) is not None or "가" <= text[token.end : token.end + 1] <= "힣"
    if "\n" in gap and not (alone or token.text_match):  # "C" or "C입니다" alone on its line
        return None
    numbered = _written_as_digit(text, token) and (
        _LABEL_AFTER.match(text, token.end) is not None
        or (text[token.end - 1] == ")" and _SPACE_THEN_WORD.match(text, token.end) is not None)
    )
    if response_header and numbered and not token.text_match:
        return None  # "답변: 1. 환자는 ...": the first step of a numbered reasoning list
    return _statement_from(text, token, marker.start(), options, texts, anchored=anchored)


def _boxed_candidates(text: str, options: tuple[str, ...]) -> list[Candidate]:
    """``\\boxed{C}``: the final-answer convention of models trained on mathematics."""
    return [(box.start(), False, box) for box in _BOXED.finditer(text)]


def _boxed_one(text: str, candidate: Candidate, options: tuple[str, ...], texts: Mapping[str, str] | None) -> _Statement | None:
    box = candidate[2]
    token = token_at(text, box.end(), options, plain_lower=True, option_texts=texts)
    if token is not None and _CLOSING_BRACE.match(text, token.end):
        return _statement_from(text, token, box.start(), options, texts)
    return None


def _postfix_candidates(text: str, options: tuple[str, ...]) -> list[Candidate]:
    if not may_hold(text, ("답", "answer")):  # every postfix tail holds one
        return []
    return [
        (start, False, None)
        for start in tokens_followed_by(text, options, (_POSTFIX_KOREAN, POSTFIX_ENGLISH), _POSTFIX_ANCHORS, every_start=True)
        if not (start > 0 and text[start - 1].isalnum() and not ("가" <= text[start - 1] <= "힣"))  # inside a word
    ]


def _postfix_one(text: str, candidate: Candidate, options: tuple[str, ...], texts: Mapping[str, str] | None) -> _Statement | None:
    start = candidate[0]
    token = token_at(text, start, options, option_texts=texts)
    if token is None:
        return None
    tail = _POSTFIX_KOREAN.match(text, token.end) or POSTFIX_ENGLISH.match(text, token.end)
    if tail is None:
        return None
    return _statement_from(text, token, token.start, options, texts)


def _names_other(text: str, start: int, end: int, options: tuple[str, ...]) -> bool:
    """Does the text between a label and its tail marker name another option or a wrong one?

    ``A: 오답, B: 오답, C: 정답`` and ``A: 오답이며 C가 정답`` mark C, not A.
    """
    if "오답" in text[start:end]:
        return True
    for m in token_pattern(options).finditer(text, start, end):
        if m.start() > 0 and text[m.start() - 1].isalnum():
            continue
        token = token_at(text, m.start(), options)
        if token is not None and (token.labelled or "가" <= text[token.end : token.end + 1] <= "힣"):
            return True
    return False


def _label_candidates(text: str, options: tuple[str, ...]) -> list[Candidate]:
    """``C: 정답``, ``- C. 경구 항생제 – 정답``, ``(C) ... 정답입니다``: a line that marks its label correct.

    Only a line holding a tail word (``_LABEL_TAIL`` needs ``답`` or ``correct``) can, so only its
    starts (the line's, and each after a comma) are candidates.
    """
    out: list[Candidate] = []
    pos = 0
    while (word := _TAIL_WORD.search(text, pos)) is not None:
        newline = text.rfind("\n", pos, word.start())
        line_start = pos if newline < 0 else newline + 1
        line_end = _line_end(text, word.end())
        starts = {m.end(): False for m in _INLINE_ITEM.finditer(text, line_start, line_end)}
        starts[_LINE_START.match(text, line_start).end()] = True
        out += [(start, False, line_start) for start, line_start in sorted(starts.items())]
        pos = line_end + 1
    return out


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _label_one(text: str, candidate: Candidate, options: tuple[str, ...], texts: Mapping[str, str] | None) -> _Statement | None:
    start, _, line_start = candidate
    token = token_at(text, start, options, after_marker=True, option_texts=texts)
    if token is None or not token.labelled:
        return None
    raw = text[token.start : token.end]
    if re.fullmatch(r"\d", raw.strip()):
        return None  # "1." opens a numbered reasoning step, not an option label
    line_end = _line_end(text, token.end)
    if not line_start and (item_end := _INLINE_ITEM.search(text, token.end, line_end)):
        line_end = item_end.start()  # an inline item ends at the next comma
    label_end = _LABEL_MARK_SPACE.match(text, token.end).end()
    for tail in _LABEL_TAIL.finditer(text, label_end, line_end):
        english_mid_line = tail.group().lstrip(" \t*").lower().startswith(("correct", "the")) and not (
            tail.group("en_sep") or tail.start() == label_end
        )  # "B: This is not correct" is prose, "B: Correct" and "B. Metformin – correct" are marks
        if english_mid_line or not _LABEL_TAIL_END.match(text, tail.end()):
            continue
        if _BETWEEN_SENTENCE_END.search(text[label_end : tail.start()]) or _names_other(
            text, label_end, tail.start(), options
        ):
            return None
        return _statement_from(text, token, token.start, options, texts, rest_from=tail.end())
    return None


# v2's statement finders, in the order that decides between two at one position (``v3_reading``): answer
# markers, postfix tails, label lines, ``\boxed{}``; each finds its candidates, and reads one of them.
FINDERS: tuple[tuple[Callable[[str, tuple[str, ...]], list[Candidate]], Reader], ...] = (
    (_prefix_candidates, _prefix_one),
    (_postfix_candidates, _postfix_one),
    (_label_candidates, _label_one),
    (_boxed_candidates, _boxed_one),
)
CONJUNCTION = _CONJUNCTION
Statement = _Statement
