"""v3's reading of a reply, reimplemented for parser v4: v2's rules, v3's rules where they read nothing, self-corrections.

v4 must give v3's answer on every reply outside the classes it adds (docs/adding-a-task.md,
ClinicalQA answer parsers), but may call neither v2's entry point (frozen, and worse than
quadratic on long replies) nor v3's (being rewritten). This module is that reading, built on v4's
own copies of the rules (``v4_core``/``v4_reading`` for v2's, ``v4_v3rules`` for v3's), with v3's decisions:
v2's rules first; v3's own rules only where they found no answer; after an explicit
self-correction (``다시 생각해보니``, ``on reflection``, ``wait,``) what follows it is read on its
own and an answer committed there wins, a hedged one leaves the reply ambiguous.
"""

from __future__ import annotations

import re
from typing import Mapping

from pipelines.tasks.clinicalqa.parsing.tokens import HEDGE, HEDGE_ALTERNATIVE_TAIL, ParseResult, is_empty, normalise_reply
from pipelines.tasks.clinicalqa.parsing.v4_reading import read_base
from pipelines.tasks.clinicalqa.parsing.v4_tokens import scan, token_at, token_matches
from pipelines.tasks.clinicalqa.parsing.v4_v3rules import (
    NONE_OF_THE_OPTIONS,
    Statement,
    json_statements,
    lead_in_statements,
    option_text_statements,
    sentence_candidates,
)

# An explicit self-correction: the writer withdraws what came before it (v3's vocabulary).
SELF_CORRECTION = re.compile(
    r"다시[ \t]*(?:한[ \t]*번[ \t]*)?(?:생각|검토|확인|살펴)(?:해|하여|해[ \t]*)?[ \t]*(?:보니|보면|본[ \t]*결과|한[ \t]*결과)"
    r"|다시[ \t]*보니|(?<![가-힣])정정(?!당)|(?<![가-힣])수정(?:합니다|하겠습니다|하면)|(?:앞의|이전|처음)[ \t]*답(?:을|변을)?[ \t]*(?:정정|수정|번복)"
    r"|잘못[ \t]*(?:생각|판단|계산|읽)했"
    r"|\b(?:on|upon)[ \t]+(?:further[ \t]+|second[ \t]+)?reflection\b|\bon[ \t]+second[ \t]+thought\b|\bcorrection[ \t]*:"
    r"|\bI[ \t]+made[ \t]+(?:a|an)[ \t]+(?:mistake|error)\b|\bI[ \t]+was[ \t]+wrong\b|\bwait[ \t]*[,.!]"
    r"|\blet[ \t]+me[ \t]+(?:reconsider|correct[ \t]+(?:myself|that))\b",
    re.IGNORECASE,
)

# Words one of which every "none of the options" statement holds (lower-cased).
NONE_KEYS = ("none", "no", "all", "없", "모두")
# Words every self-correction contains (lower-cased), so a reply without any is not scanned for one.
_CORRECTION_KEYS = ("다시", "정정", "수정", "답", "잘못", "reflection", "second", "correction", "made", "wrong", "wait", "let")
_EAGER_RULES = (json_statements, option_text_statements, lead_in_statements)  # marker-led: few statements
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?。\n])")


def _own_rules(body: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> ParseResult:
    """What v3's own rules read where v2's read nothing: their last statement (by position).

    v3 read every statement of its rules (JSON, committing sentences, option texts, lead-ins; at
    one position the first rule's) and kept the last. The marker-led rules yield few statements and
    are read whole; committing sentences, which a reply can repeat thousands of times, are read
    from the last candidate back, only down to the last statement of the other rules.
    """
    if scan(NONE_OF_THE_OPTIONS, body, NONE_KEYS):
        return ParseResult(None, "no_answer")
    json_found, *others = ({s.position: s for s in reversed(rule(body, options, texts))} for rule in _EAGER_RULES)
    eager = {**{p: s for found in reversed(others) for p, s in found.items()}, **json_found}  # json wins a tie
    floor = max(eager, default=-1)
    sentence = None
    for position, read in sorted(sentence_candidates(body, options, texts), key=lambda c: -c[0]):
        if position < floor or (sentence is not None and position < sentence.position):
            break
        if sentence is None and (s := read()) is not None:
            sentence = s
    candidates = dict(eager)
    if sentence is not None and (sentence.position not in json_found):
        candidates[sentence.position] = sentence  # a sentence beats an option text or a lead-in at its position
    if not candidates:
        return ParseResult(None, "no_answer")
    last = candidates[max(candidates)]
    return ParseResult(last.prediction, "ok") if last.prediction is not None else ParseResult(None, "ambiguous")


def _read(raw: str, body: str, options: tuple[str, ...], option_texts: Mapping[str, str] | None,
          texts: Mapping[str, str] | None) -> ParseResult:
    base = read_base(raw, options, option_texts)
    if base.status != "no_answer":
        return base
    return _own_rules(body, options, texts)


def _hedged_about(segment: str, letter: str) -> bool:
    """Does a sentence of ``segment`` that names ``letter`` hedge (``C일 수도``, ``might be C``, ``C?``)?"""
    named = re.compile(rf"(?<![A-Za-z]){re.escape(letter)}(?![A-Za-z])")
    return any(named.search(s) and HEDGE.search(s) for s in _SENTENCE_SPLIT.split(segment))


def _hedges_another(segment: str, letter: str, options: tuple[str, ...]) -> bool:
    """Does ``segment`` name another option as a possibility (``C일 수도``, ``C일지도``)?"""
    for m in token_matches(segment, options, HEDGE_ALTERNATIVE_TAIL.pattern):
        raw = m.group("value")
        value = options[int(raw) - 1] if raw.isdigit() else raw.upper()
        if value != letter and HEDGE_ALTERNATIVE_TAIL.match(segment, m.end()):
            return True
    return False


def read_like_v3(
    text: str, opts: tuple[str, ...], option_texts: Mapping[str, str] | None, texts: Mapping[str, str] | None
) -> ParseResult:
    """v3's reading of a non-empty ``text``; ``texts`` are ``option_texts`` normalised (``normalise_text``)."""
    body = normalise_reply(text)
    corrections = scan(SELF_CORRECTION, body, _CORRECTION_KEYS)
    if corrections:
        after = body[corrections[-1].end() :]
        if not is_empty(after):
            revised = _read(after, after, opts, option_texts, texts)
            if revised.status == "ok" and _hedged_about(after, revised.prediction or ""):
                return ParseResult(None, "ambiguous")  # withdrawn, but nothing committed in its place
            if revised.status in ("ok", "ambiguous"):
                return revised
            before = _read(text, body, opts, option_texts, texts)
            if before.prediction is not None and _hedges_another(after, before.prediction, opts):
                return ParseResult(None, "ambiguous")  # "정답: A ... 다시 생각해보니 C일 수도 있다"
            return before
    return _read(text, body, opts, option_texts, texts)


__all__ = ["SELF_CORRECTION", "read_like_v3", "token_at"]
