"""What every answer parser version shares: the answer token, the normalised reply, the markers.

v1 and v2 read the same answer forms (a letter of the options or a digit 1..n, ``번``/``번째``,
brackets, quotes, bold) after the same normalisation (NFKC, ``<think>`` blocks dropped), behind
the same answer markers (``정답``, ``answer``, ...). Those pieces live here, under public names,
so that each version imports this module and never another version: v2 once imported v1's
private names and v1 imported v2 for its version table, a loop that made v1 impossible to freeze.

Everything here is part of v1's frozen behaviour (``v1`` imports it): changing what a name here
matches changes v1's results, which must stay reproducible. A version that needs something
different defines its own piece in its own module (as ``v2`` does for its negations, conjunctions
and sentence ends) instead of editing a shared one.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

ParseStatus = Literal["ok", "no_answer", "ambiguous", "empty"]
DEFAULT_OPTIONS: tuple[str, ...] = ("A", "B", "C", "D", "E")


@dataclass(frozen=True)
class ParseResult:
    prediction: str | None
    status: ParseStatus


# Korean syllables that may directly follow an answer: particles and copulas, "번", and the
# conjunctions handled by the ambiguity rule. Anything else (a counter, a word) means the letter
# or digit is part of something else ("3개", "A형"). "일" follows a letter as a copula ("C일 것이다")
# but a digit as a counter ("3일"), so only letters may take it.
HANGUL_AFTER_DIGIT = "번이입은는가으로을를와과임예라다나거"
HANGUL_AFTER_LETTER = HANGUL_AFTER_DIGIT + "일"
_OPENERS = "([【「『<\"'“‘`"
_CLOSERS = ")]】」』>\"'”’`"

_THINK_CLOSE = re.compile(r"</think\s*>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think\s*>", re.IGNORECASE)

_KOREAN_MARKER = (
    r"(?<![가-힣])(?:최종\s*)?(?:정답|해답|답변|답)(?:\s*(?:번호|보기|선택지))?"
    r"(?:은|는|이|을|으로는|으로|로)?(?![가-힣])"
)
_ENGLISH_MARKER = r"\b(?:answer|(?:correct|right|best)\s+(?:option|choice))\b"
# A marker that the answer follows: "정답은", "답:", "The answer is", "correct option".
PREFIX_MARKER = re.compile(f"{_KOREAN_MARKER}|{_ENGLISH_MARKER}", re.IGNORECASE)

# What may stand between a prefix marker and its answer: punctuation, markup, a few filler words.
FILLER = re.compile(
    r"(?:[\s:=\-–—>→⇒*_#|~]"
    r"|\bis\b|\bwould\s+be\b|\bshould\s+be\b|\bwill\s+be\b|\bmust\s+be\b"
    r"|\bchoice\b|\boption\b|\bprobably\b|\blikely\b|\bthen\b"
    r"|아마도?|바로|보기|선택지)*",
    re.IGNORECASE,
)

# A sentence that says its statement might not hold ("수도 있다", "might", a question mark), and
# the tail after another option that names it as a possibility too ("D일 수도").
HEDGE = re.compile(
    r"수도\s*있|수\s*있|일지도|지도\s*모르|않을까|일까|\?|\bmight\b|\bcould\b|\bpossibly\b|\bperhaps\b",
    re.IGNORECASE,
)
HEDGE_ALTERNATIVE_TAIL = re.compile(r"\s*(?:일|이)?\s*(?:수도|수\s*있|지도)")
# The English marker after its answer: "B is the correct answer".
POSTFIX_ENGLISH = re.compile(r"\s+is\s+(?:the\s+)?(?:(?:correct|right|best|final)\s+)?answer\b", re.IGNORECASE)


@lru_cache(maxsize=16)
def token_pattern(options: tuple[str, ...]) -> re.Pattern[str]:
    """The answer token for these options: groups ``open``, ``value`` (letter or digit), ``bun``, ``close``.

    Each version decides on its own when a match ends cleanly (a particle, a unit, a name).
    """
    letters = "".join(re.escape(o) for o in options)
    digits = "".join(str(i) for i in range(1, min(len(options), 9) + 1))
    return re.compile(
        rf"(?P<open>[{re.escape(_OPENERS)}]*(?:\*\*|__)?[{re.escape(_OPENERS)}]*)"
        rf"(?P<value>[{letters}{letters.lower()}]|[{digits}])(?![A-Za-z0-9])"
        r"(?P<bun>\s*번(?:째)?)?"
        rf"(?P<close>[{re.escape(_CLOSERS)}]*(?:\*\*|__)?[{re.escape(_CLOSERS)}]*)"
    )


def drop_reasoning(text: str) -> str:
    """Everything after the last ``</think>``; before an unclosed ``<think>`` (cut-off reasoning)."""
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        return text[closes[-1].end() :]
    opening = _THINK_OPEN.search(text)
    if opening:
        return text[: opening.start()]
    return text


def is_empty(text: str | None) -> bool:
    """No reply, or whitespace only: the ``empty`` status of every version."""
    return text is None or not text.strip()


def normalise_reply(text: str) -> str:
    """The text a parser reads: NFKC (full-width and circled forms become ASCII), reasoning dropped."""
    return drop_reasoning(unicodedata.normalize("NFKC", text))
