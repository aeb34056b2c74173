"""Answer parser v1 for choice tasks (frozen): which option did a free-text reply commit to?

Frozen: v1 scored published results, and a result names its parser version, so re-scoring the
stored raw outputs with v1 must give exactly those results again (they stay served next to the v2
results that supersede them). So this module is never edited, not even to fix a wrong answer it
gives: a fix is a new version (``v2``) that a new task version selects. It imports only the shared
``tokens`` module, whose names are frozen along with it, and no other version.

The score of a choice task is only as honest as this parser. It must read the answers models
really write (Korean or English markers, letters, digits, circled digits, brackets, bold,
full-width forms, reasoning before the answer, explanations after it) and it must never invent an
answer from a stray letter: the ``a`` in "The answer is B, a ..." is not option A, and the ``E``
of "E. coli" is not option E. An answer it cannot read counts as wrong, so the rules below lean
towards "unparsable" whenever a reply does not commit to exactly one option.

The parser is versioned (``PARSER_VERSION``): any change in what it returns for some text must
bump the version (a new module and its entry in ``versions.PARSERS``), because the version
enters the task's results and a new version re-scores the stored raw outputs into a new result.

Rules of v1, in order:

1. Whitespace-only text is ``empty``.
2. NFKC normalisation: full-width letters, digits and punctuation become ASCII and circled digits
   ①-⑤ (and circled letters Ⓐ-Ⓔ) become plain digits/letters.
3. Reasoning blocks are dropped: everything up to the last ``</think>`` (this also covers a reply
   whose opening ``<think>`` was part of the chat template). A ``<think>`` that never closes means
   the reasoning was cut off: only the text before it counts.
4. Answer statements are collected:
   - a marker followed by the answer: ``정답``, ``답``, ``답변``, ``해답``, ``최종 답`` (as a word of
     its own, optionally with a particle: ``정답은``, ``답:``), ``answer`` in any case (``The
     answer is B``, ``**Answer:** C``, ``Final answer: ④``), or ``correct option/choice``; between
     marker and answer only colons, dashes, arrows, ``=``, bold/heading marks, whitespace (line
     breaks too) and a few filler words (``is``, ``would be``, ``보기``, ``아마``, ...) may stand;
   - the answer followed by a marker: ``C가 정답입니다``, ``3번이 답이다``, ``B is the correct
     answer``.
   The answer itself is a letter of the options or a digit 1..n (mapped to the n-th option),
   optionally with ``번``/``번째``, brackets ``() [] 【】 「」``, quotes or ``**bold**``. It must end
   at a word boundary: no letter or digit may follow (``Bcl``, ``12``, ``1.5``, ``B-cell`` are
   not answers), and a Korean syllable after it must be a particle or copula (``C입니다``, ``C일
   것이다``, ``3번``), not a counter or a word (``3개``, ``3일``, ``2가지``, ``A형``). A letter
   followed by ``.`` and a lower-case word is an abbreviated name (``E. coli``). A lower-case
   letter counts only inside brackets or bold, after a colon as the last thing on its line
   (``answer: c``), or as the whole reply, so the article in "The answer is a bacterial ..." is
   never an answer.
   A statement whose answer is negated (``A가 아니라``, ``A는 답이 아니다``) does not count, except
   that ``정답은 A가 아니라 C`` counts as C.
5. Two different answers joined within one statement (``정답: B 또는 C``, ``B or C``, ``B/C``,
   ``B, C``, ``B와 C``, ``B이거나 C``) make that statement ``ambiguous``.
6. A statement is *hedged* when the rest of its sentence says it might not hold (``A일 수도
   있지만``, ``might``, ``could``, a question mark). The final statement is the last one that is
   not hedged; when every statement is hedged, the last hedged one, unless it names two different
   options as possibilities (``C일 수도 있고 D일 수도 있다``: ambiguous). So reasoning that
   considers other options before a final ``정답: C`` gives C, and an explanation after the
   answer that mentions another option hedgingly does not override it. Several plain statements:
   the last one wins (the model's final word).
7. Without any statement, a reply that is nothing but one option (``C``, ``(C)``, ``**C**``, ``3``,
   ``③``, ``C.``, ``3번``) is that option. A label followed by text (``C. 경구 항생제``) is not
   accepted: without the option texts the parser cannot tell a chosen option from an echoed
   option list or a name (``E. coli ...``); models are asked to end with ``정답: X``.
8. Otherwise ``no_answer``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from pipelines.tasks.clinicalqa.parsing.tokens import (
    DEFAULT_OPTIONS,
    FILLER,
    HANGUL_AFTER_DIGIT,
    HANGUL_AFTER_LETTER,
    HEDGE,
    HEDGE_ALTERNATIVE_TAIL,
    POSTFIX_ENGLISH,
    PREFIX_MARKER,
    ParseResult,
    is_empty,
    normalise_reply,
    token_pattern,
)

PARSER_VERSION = "v1"

_NEGATION_AFTER = re.compile(r"\s*(?:가|이|은|는)?\s*(?:아니|아닌|not\b|isn't\b)", re.IGNORECASE)
_CONTRAST = re.compile(r"\s*(?:가|이|은|는)?\s*아니(?:라|고)\s*[,，]?\s*")
_CONJUNCTION = re.compile(
    r"\s*[(\[]?\s*(?:,|/|&|\+|또는|혹은|아니면|이거나|거나|이나|나|와|과|및|\bor\b|\band\b)\s*",
    re.IGNORECASE,
)
_POSTFIX_KOREAN = re.compile(
    r"\s*(?:가|이|은|는)?\s*(?:최종\s*)?(?:정답|답)(?!\s*(?:이|가)?\s*아니)(?:이다|입니다|임|이에요|예요|이며|이고|이므로|이라|일|(?![가-힣]))"
)
_SENTENCE_END = re.compile(r"[.!。\n]")


@dataclass(frozen=True)
class _Token:
    value: str  # the option letter it stands for
    start: int
    end: int


@dataclass(frozen=True)
class _Statement:
    position: int
    prediction: str | None  # None when ambiguous
    hedged: bool
    hedge_alternatives: bool


_NUMBER_CONTINUES = re.compile(r"[.,]\d")  # "1.5", "2,000": a number, not an option
_NAME_CONTINUES = re.compile(r"-[A-Za-z가-힣]|\.[ \t]*[a-z]")  # "B-cell", "E. coli": a name, not an option
_LINE_ENDS = re.compile(r"\s*[.!]?[ \t]*(?:\n|$)")


def _token_at(text: str, pos: int, options: tuple[str, ...], plain_lower: bool = False) -> _Token | None:
    """The answer token starting exactly at ``pos``, if there is one and it ends cleanly.

    A lower-case letter counts only when bracketed or bold, or, with ``plain_lower``, when it
    is the last thing on its line (after "answer:" or as the whole reply).
    """
    m = token_pattern(options).match(text, pos)
    if m is None:
        return None
    end = m.end()
    raw = m.group("value")
    if _NUMBER_CONTINUES.match(text, end) or _NAME_CONTINUES.match(text, end):
        return None
    following = text[end : end + 2]
    if following[:1] and "가" <= following[0] <= "힣":
        allowed = HANGUL_AFTER_DIGIT if raw.isdigit() and not m.group("bun") else HANGUL_AFTER_LETTER
        if following[0] not in allowed or following == "가지":
            return None
    elif following[:1].isalnum():
        return None
    if raw.islower():
        bracketed = bool(m.group("open")) or bool(m.group("close"))
        if not (bracketed or (plain_lower and _LINE_ENDS.match(text, end))):
            return None
    value = options[int(raw) - 1] if raw.isdigit() else raw.upper()
    return _Token(value=value, start=m.start(), end=end)


def _sentence_rest(text: str, pos: int) -> str:
    m = _SENTENCE_END.search(text, pos)
    return text[pos : m.start() if m else len(text)]


def _statement_from(text: str, token: _Token, position: int, options: tuple[str, ...]) -> _Statement | None:
    """Build a statement from its first answer token: negation, conjunction, hedging."""
    if _NEGATION_AFTER.match(text, token.end):
        contrast = _CONTRAST.match(text, token.end)
        replacement = _token_at(text, contrast.end(), options) if contrast else None
        if replacement is None:
            return None
        token = replacement
    conj = _CONJUNCTION.match(text, token.end)
    if conj:
        other = _token_at(text, conj.end(), options)
        if other is not None and other.value != token.value:
            return _Statement(position=position, prediction=None, hedged=False, hedge_alternatives=False)
    rest = _sentence_rest(text, token.end)
    hedged = HEDGE.search(rest) is not None
    alternatives = False
    if hedged:
        for m in token_pattern(options).finditer(rest):
            other = _token_at(rest, m.start(), options)
            if other is not None and other.value != token.value and HEDGE_ALTERNATIVE_TAIL.match(rest, other.end):
                alternatives = True
                break
    return _Statement(position=position, prediction=token.value, hedged=hedged, hedge_alternatives=alternatives)


def _prefix_statements(text: str, options: tuple[str, ...]) -> list[_Statement]:
    out = []
    for marker in PREFIX_MARKER.finditer(text):
        filler = FILLER.match(text, marker.end())
        token = _token_at(text, filler.end(), options, plain_lower=any(c in filler.group() for c in ":="))
        if token is None:
            continue
        statement = _statement_from(text, token, marker.start(), options)
        if statement is not None:
            out.append(statement)
    return out


def _postfix_statements(text: str, options: tuple[str, ...]) -> list[_Statement]:
    out = []
    pattern = token_pattern(options)
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        pos = m.start() + 1
        if m.start() > 0 and text[m.start() - 1].isalnum() and not ("가" <= text[m.start() - 1] <= "힣"):
            continue  # inside a word or number
        token = _token_at(text, m.start(), options)
        if token is None:
            continue
        tail = _POSTFIX_KOREAN.match(text, token.end) or POSTFIX_ENGLISH.match(text, token.end)
        if tail is None:
            continue
        statement = _statement_from(text, token, token.start, options)
        if statement is not None:
            out.append(statement)
    return out


def _bare_option(text: str, options: tuple[str, ...]) -> str | None:
    stripped = text.strip()
    token = _token_at(stripped, 0, options, plain_lower=True)
    if token is None:
        return None
    if re.fullmatch(r"\s*[.。!]?\s*", stripped[token.end :]):
        return token.value
    return None


def parse_answer_v1(text: str | None, options: Sequence[str] = DEFAULT_OPTIONS) -> ParseResult:
    """Read the option a reply commits to; see the module docstring for the rules of v1."""
    if is_empty(text):
        return ParseResult(None, "empty")
    opts = tuple(options)
    body = normalise_reply(text)
    statements = sorted(_prefix_statements(body, opts) + _postfix_statements(body, opts), key=lambda s: s.position)
    if statements:
        plain = [s for s in statements if not s.hedged]
        final = plain[-1] if plain else statements[-1]
        if final.prediction is None or (final.hedged and final.hedge_alternatives):
            return ParseResult(None, "ambiguous")
        return ParseResult(final.prediction, "ok")
    bare = _bare_option(body, opts)
    if bare is not None:
        return ParseResult(bare, "ok")
    return ParseResult(None, "no_answer")
