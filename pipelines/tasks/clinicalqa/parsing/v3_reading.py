"""v2's final-statement rule, as parser v3 applies it: lazily, so that only the statements it needs are read.

v2 read every statement of a reply (``parsing.v3_base`` finds them as v2 did) and then kept the last
line-anchored one, or the last one. A reply of thousands of repeated statements (the parse attack's
``"정답: A 아니라 B "`` over 64 KiB) cost thousands of readings, each a token, its option text and
its hedges. Here every candidate position is found by one scan per finder, and a position is read
only when the rule asks: from the end, the last line-anchored plain statement and, only when one
scan says a later statement could name several options, the later ones; without one, the last
plain statement. The answer is the one reading them all gives (the equality test,
``tests/unit/pipelines/test_parsing_v3_equality.py``; docs/adding-a-task.md, "Answer parsing").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Mapping, Sequence

from pipelines.tasks.clinicalqa.parsing.tokens import (
    DEFAULT_OPTIONS,
    ParseResult,
    is_empty,
    normalise_reply,
)
from pipelines.tasks.clinicalqa.parsing.v3_base import CONJUNCTION, FINDERS, Statement
from pipelines.tasks.clinicalqa.parsing.v3_find import token_pattern
from pipelines.tasks.clinicalqa.parsing.v3_scan import normalise_text, token_at


def _bare_option(text: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> ParseResult | None:
    """The whole reply is one option (``C``, ``(C)``, ``3번``), or, with option texts, one label and its text."""
    stripped = text.strip()
    token = token_at(stripped, 0, options, plain_lower=True, option_texts=texts)
    if token is None:
        return None
    if re.fullmatch(r"\s*[.。!]?\s*", stripped[token.end :]):
        return ParseResult(token.value, "ok")
    if "\n" in stripped:
        return None
    if token.text_match:
        return ParseResult(token.value, "ok")
    if token.conflict is not None:
        return ParseResult(None, "ambiguous")
    return None


class _Reading:
    """The statements of a reply, read lazily: a position's statement is worked out only when v2's
    final-statement rule needs it, so a reply of thousands of statements (the parse attack's
    ``"정답: A 아니라 B "`` repeated) costs a handful of readings plus one scan for what could reopen
    the answer. The rule, as v2 applied it to every statement read in order: the last line-anchored
    plain statement wins unless a later plain one names it among several options; without one, the
    last plain statement; without that, the last statement."""

    def __init__(self, text: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> None:
        self.text, self.options, self.texts = text, options, texts
        self.readers: dict[int, list[Callable[[], Statement | None]]] = {}
        self.eligible: set[int] = set()  # positions of a marker that opens its line
        for find in FINDERS:
            for position, anchored, read in find(text, options, texts):
                self.readers.setdefault(position, []).append(read)
                if anchored:
                    self.eligible.add(position)
        self.positions = sorted(self.readers)
        self._read: dict[int, Statement | None] = {}

    def at(self, position: int) -> Statement | None:
        """The statement at ``position``: the first finder's (prefix, postfix, label, boxed) that makes one."""
        if position not in self._read:
            self._read[position] = next((s for read in self.readers[position] if (s := read()) is not None), None)
        return self._read[position]

    def may_reopen(self, after: int) -> bool:
        """Could a statement after ``after`` name several options? Only through a token listed with
        another (``_CONJUNCTION``), a bracketed second token, or another option's text after a token
        (``Token.conflict``). One scan; False means none can."""
        if _listed(self.options).search(self.text, after) is not None:
            return True
        if self.texts:
            rest = normalise_text(self.text[after:])
            return any(t and t in rest for t in self.texts.values())
        return False

    def final(self) -> ParseResult | None:
        """v2's final-statement rule (the class docstring), or None when the reply holds no statement."""
        for position in sorted(self.eligible, reverse=True):
            s = self.at(position)
            if s is not None and s.anchored and not s.hedged:
                later = [p for p in self.positions if p > s.position] if self.may_reopen(s.position + 1) else []
                reopened = any((t := self.at(p)) is not None and not t.hedged and t.prediction is None
                               and s.prediction in t.alternatives for p in later)
                return ParseResult(None, "ambiguous") if reopened else _result(s)
        last = None
        for position in reversed(self.positions):
            s = self.at(position)
            if s is None:
                continue
            last = last or s
            if not s.hedged:
                return _result(s)
        return None if last is None else _result(last)


@lru_cache(maxsize=16)
def _listed(options: tuple[str, ...]) -> re.Pattern[str]:
    """Where a token starts that another follows, after a conjunction or a bracket (``A 또는 B``, ``A (B)``)."""
    token = re.sub(r"\(\?P<\w+>", "(?:", token_pattern(options).pattern)
    return re.compile(rf"(?=(?:{token})(?:(?i:{CONJUNCTION.pattern})(?:{token})|[ \t]*[(\[](?:{token})))")


def _result(final: Statement) -> ParseResult:
    if final.prediction is None or (final.hedged and final.hedge_alternatives):
        return ParseResult(None, "ambiguous")
    return ParseResult(final.prediction, "ok")


def read_statements(
    text: str | None,
    options: Sequence[str] = DEFAULT_OPTIONS,
    option_texts: Mapping[str, str] | None = None,
) -> ParseResult:
    """The reading of a reply by v2's statements (what ``parse_answer_v2`` returns for it).

    ``option_texts`` maps option letters to their texts (``{"B": "Metformin"}``); without it a label
    followed by text is accepted only right after an answer marker.
    """
    if is_empty(text):
        return ParseResult(None, "empty")
    opts = tuple(options)
    texts = {k: normalise_text(v) for k, v in option_texts.items() if k in opts} if option_texts else None
    body = normalise_reply(text)
    final = _Reading(body, opts, texts).final()
    if final is not None:
        return final
    bare = _bare_option(body, opts, texts)
    return bare if bare is not None else ParseResult(None, "no_answer")
