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
import unicodedata
from functools import lru_cache
from typing import Mapping, Sequence

from pipelines.tasks.clinicalqa.parsing.tokens import (
    DEFAULT_OPTIONS,
    ParseResult,
    is_empty,
    normalise_reply,
)
from pipelines.tasks.clinicalqa.parsing.v3_base import (
    CONJUNCTION,
    FINDERS,
    Candidate,
    Statement,
)
from pipelines.tasks.clinicalqa.parsing.v3_find import may_hold, token_pattern
from pipelines.tasks.clinicalqa.parsing.v3_scan import (
    hedge_of,
    normalise_text,
    sentence_before,
    token_at,
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


class _Reading:
    """The statements of a reply, read lazily: a position's statement is worked out only when v2's
    final-statement rule needs it, so a reply of thousands of statements (the parse attack's
    ``"정답: A 아니라 B "`` repeated) costs a handful of readings plus one scan for what could reopen
    the answer. The rule, as v2 applied it to every statement read in order: the last line-anchored
    plain statement wins unless a later plain one names it among several options; without one, the
    last plain statement; without that, the last statement."""

    def __init__(self, text: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> None:
        self.text, self.options, self.texts = text, options, texts
        self._found: dict[int, list[Candidate]] = {}
        self._at: dict[int, list[tuple[int, Candidate]]] | None = None  # position -> (finder, candidate), in order
        self._positions: list[int] = []
        self._read: dict[int, Statement | None] = {}
        self._listless: bool | None = None  # no statement can name several options

    def candidates(self, finder: int) -> list[Candidate]:
        """What ``FINDERS[finder]`` finds, found once and only when asked."""
        if finder not in self._found:
            self._found[finder] = FINDERS[finder][0](self.text, self.options)
        return self._found[finder]

    def positions(self) -> list[int]:
        """Every candidate position, in order (every finder asked)."""
        if self._at is None:
            self._at = {}
            for finder in range(len(FINDERS)):
                for candidate in self.candidates(finder):
                    self._at.setdefault(candidate[0], []).append((finder, candidate))
            self._positions = sorted(self._at)
        return self._positions

    def read(self, finder: int, candidate: Candidate) -> Statement | None:
        return FINDERS[finder][1](self.text, candidate, self.options, self.texts)

    def at(self, position: int) -> Statement | None:
        """The statement at ``position``: the first finder's (prefix, postfix, label, boxed) that makes one."""
        if position not in self._read:
            self.positions()
            self._read[position] = None if self.voided(position) else next(
                (s for f, c in self._at[position] if (s := self.read(f, c)) is not None), None)
        return self._read[position]

    def voided(self, position: int) -> bool:
        """Is every statement at ``position`` None, without reading it? Every finder builds its statement
        from the sentence before ``position`` (``v3_base._statement_from``): a conditional or a report
        there voids it, unless it names several options first, which a reply where nothing can
        (``may_reopen`` from its start) never does. A reply of thousands of conditional statements
        (``"만약 정답: A "`` repeated) is then read at the cost of their clauses' hedges."""
        if len(self.text) < _SHORT:
            return False  # a short reply reads its few statements faster than this looks for lists
        if self._listless is None:
            self._listless = not self.may_reopen(0)
        return self._listless and hedge_of(sentence_before(self.text, position), "") == "void"

    def may_reopen(self, after: int) -> bool:
        """Could a statement after ``after`` name several options? Only through a token listed with
        another (``_CONJUNCTION``), a bracketed second token, or another option's text after a token
        (``Token.conflict``). A few substring tests and at most one scan; False means none can."""
        if may_hold(self.text, _LISTED_KEYS) and _listed(self.options).search(self.text, after) is not None:
            return True
        if self.texts:
            rest = self.text[after:]
            # every word of a normalised text is a run of word characters, kept whole by the normalisation
            folded_rest = unicodedata.normalize("NFKC", rest).casefold()
            if not any(t and t.split(" ")[0] in folded_rest for t in self.texts.values()):
                return False
            normalised = normalise_text(rest)
            return any(t and t in normalised for t in self.texts.values())
        return False

    def final(self) -> ParseResult | None:
        """v2's final-statement rule (the class docstring), or None when the reply holds no statement.

        Only a marker's statement can open its line, so the other finders are asked only when no
        anchored statement decides, or when a later statement may reopen it."""
        for candidate in reversed(self.candidates(0)):
            if not candidate[1]:
                continue
            position = candidate[0]
            s = None if self.voided(position) else self.read(0, candidate)  # the prefix finder's comes first
            if s is not None:
                self._read[position] = s
            if s is not None and s.anchored and not s.hedged:
                if not self.may_reopen(s.position + 1):
                    return _result(s)
                reopened = any((t := self.at(p)) is not None and not t.hedged and t.prediction is None
                               and s.prediction in t.alternatives for p in self.positions() if p > s.position)
                return ParseResult(None, "ambiguous") if reopened else _result(s)
        last = None
        for position in reversed(self.positions()):
            s = self.at(position)
            if s is None:
                continue
            last = last or s
            if not s.hedged:
                return _result(s)
        return None if last is None else _result(last)


# Words one of which a token listed with another holds: a conjunction or a bracket (lower-cased).
_LISTED_KEYS = (",", "/", "&", "+", "또는", "혹은", "아니면", "거나", "나", "와", "과", "및", "or", "and", "(", "[")


@lru_cache(maxsize=16)
def _listed(options: tuple[str, ...]) -> re.Pattern[str]:
    """Where a token starts that another follows, after a conjunction or a bracket (``A 또는 B``, ``A (B)``)."""
    token = re.sub(r"\(\?P<\w+>", "(?:", token_pattern(options).pattern)
    conjunction = CONJUNCTION.pattern  # its blank runs possessive: no backtracking over a long one
    return re.compile(rf"(?=(?:{token})(?:(?i:{conjunction})(?:{token})|[ \t]*[(\[](?:{token})))")


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
