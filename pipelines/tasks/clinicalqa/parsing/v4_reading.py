"""v2's final-statement rule for parser v4, read lazily: only the statements the rule needs are worked out.

v2 read every statement of a reply and then kept the last line-anchored one (or the last one);
a reply of thousands of repeated statements (the parse attack's ``"정답: A 아니라 B "`` over 16 KB)
cost thousands of readings. ``Reading`` finds every candidate position in one scan per finder
(``v4_core.FINDERS``) and reads a position only when the rule asks: from the end, the last
line-anchored plain statement, and whether a later statement names it among several options (one
scan says whether any can); without one, the last plain statement. The answer is the same as
reading them all (docs/adding-a-task.md, ClinicalQA answer parsers).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence

from pipelines.tasks.clinicalqa.parsing.tokens import (
    DEFAULT_OPTIONS,
    ParseResult,
    is_empty,
    normalise_reply,
)
from pipelines.tasks.clinicalqa.parsing.v4_core import CONJUNCTION, FINDERS, Statement
from pipelines.tasks.clinicalqa.parsing.v4_tokens import (
    gate,
    hedge_of,
    normalise_text,
    sentence_before,
    token_at,
    token_source,
)


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


_SHORT = 4096  # characters
_SENTENCE_ENDS = re.compile("[.!?。;\n]")  # where v4_tokens.sentence_before starts a sentence...
_CLAUSE_REACH = len(sentence_before("x" * 1000, 1000))  # ...and as far back as it reads


class Reading:
    """The statements of a reply, read lazily: a position's statement is worked out only when the
    final-statement rule needs it, so a reply of thousands of statements costs a handful of them
    (the last line-anchored one, and the last one) plus one scan for what could reopen it."""

    def __init__(self, text: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> None:
        self.text, self.options, self.texts = text, options, texts
        self.readers: dict[int, list[Callable[[], Statement | None]]] = {}
        self.eligible: list[int] = []  # positions of a marker that opens its line
        for find in FINDERS:
            for position, anchored, read in find(text, options, texts):
                self.readers.setdefault(position, []).append(read)
                if anchored:
                    self.eligible.append(position)
        self.positions = sorted(self.readers)
        self._read: dict[int, Statement | None] = {}
        self._listless: bool | None = None  # no statement can name several options
        self._ends: list[int] | None = None

    def at(self, position: int) -> Statement | None:
        """The statement at ``position``: the first finder's (prefix, postfix, label, boxed) that makes one."""
        if position not in self._read:
            self._read[position] = None if self.voided(position) else next(
                (s for read in self.readers[position] if (s := read()) is not None), None)
        return self._read[position]

    def voided(self, position: int) -> bool:
        """Is every statement at ``position`` None, without reading it? Every finder builds its statement
        from the sentence before ``position`` (``v4_core._statement_from``): a conditional or a report
        there voids it, unless it names several options first, which a reply where nothing can
        (``may_reopen`` from its start) never does. A reply of thousands of conditional statements
        (``"만약 정답: A "`` repeated) is then read at the cost of their clauses' hedges."""
        if len(self.text) < _SHORT:
            return False  # a short reply reads its few statements faster than this looks for lists
        if self._listless is None:
            self._listless = not self.may_reopen(0)
        if not self._listless:
            return False
        if self._ends is None:  # sentence_before's boundaries, found once: a bisection per statement
            self._ends = [m.start() for m in _SENTENCE_ENDS.finditer(self.text)]
        i = bisect_left(self._ends, position)
        start = max(self._ends[i - 1] + 1 if i else 0, position - _CLAUSE_REACH, 0)
        return hedge_of(self.text[start:position], "") == "void"

    def may_reopen(self, after: int) -> bool:
        """Could a statement after ``after`` name several options (a list, a bracketed second letter,
        a letter followed by another option's text)? One scan; False means none can."""
        second = token_source(self.options)
        listed = gate(self.options, rf"(?:{CONJUNCTION.pattern})(?:{second})|[ \t]*[(\[](?:{second})")
        if listed.search(self.text, after) is not None:
            return True
        if self.texts:
            rest = normalise_text(self.text[after:])
            return any(t and t in rest for t in self.texts.values())
        return False

    def final(self) -> ParseResult | None:
        """v2's final-statement rule, or None when the reply holds no statement.

        The last line-anchored plain statement wins unless a later statement names it among several
        options; without one, the last plain statement; without that, the last statement."""
        for position in sorted(set(self.eligible), reverse=True):
            s = self.at(position)
            if s is not None and s.anchored and not s.hedged:
                later = [p for p in self.positions if p > s.position] if self.may_reopen(s.position + 1) else []
                reopened = any(
                    (t := self.at(p)) is not None and not t.hedged and t.prediction is None and s.prediction in t.alternatives
                    for p in later
                )
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


def _result(final: Statement) -> ParseResult:
    if final.prediction is None or (final.hedged and final.hedge_alternatives):
        return ParseResult(None, "ambiguous")
    return ParseResult(final.prediction, "ok")


def read_base(
    text: str | None,
    options: Sequence[str] = DEFAULT_OPTIONS,
    option_texts: Mapping[str, str] | None = None,
) -> ParseResult:
    """What v2's rules read in ``text`` (raw: normalised here, as v2 normalised what it was given).

    ``option_texts`` maps option letters to their texts (``{"B": "Metformin"}``); without it no
    label followed by text counts except right after an answer marker.
    """
    if is_empty(text):
        return ParseResult(None, "empty")
    opts = tuple(options)
    texts = {k: normalise_text(v) for k, v in option_texts.items() if k in opts} if option_texts else None
    body = normalise_reply(text)
    final = Reading(body, opts, texts).final()
    if final is not None:
        return final
    bare = _bare_option(body, opts, texts)
    return bare if bare is not None else ParseResult(None, "no_answer")
