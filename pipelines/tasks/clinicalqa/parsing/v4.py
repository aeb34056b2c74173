"""Answer parser v4 for choice tasks: v3's reading, plus every committing style held-out replies showed, near linear.

v4 reads a reply exactly as v3 does (``v4_base``, its own reimplementation: it calls neither v2's
nor v3's entry point and shares no state with them), and only where that reading finds no answer
does it consult the styles v3 missed (``v4_forms``, ``v4_layout``): Chinese and Japanese answer
markers, Korean ordinal words, a lower-case letter in a Korean committing sentence, a markdown
table with a verdict column, committing sentences beyond v3's templates (by letter, circled digit,
ordinal word, or option text with its letter in brackets), labels in other brackets or under
heading words, and a bracketed or bold last line. A reply that says none of the options is right
gets none of them, and two of these statements that disagree give none.

The one place v4 departs from a letter v3 read: a letter in a sentence that goes on to reject it
(``The answer is A, but that is wrong``), then another letter alone on the last line. v3 read the
rejected letter; v4 reads the last one.

Cost: every rule scans the reply a bounded number of times, and per-letter work happens only where
a one-scan gate admits the letter (``v4_tokens.token_matches``), so a 16 KB reply of bare letters or
of repeated statements parses in milliseconds (``bench/parse_v4.py``); a reply longer than any
generation budget gives is read from its first 2,048 and last 6,144 characters (``READ_LIMIT``).
See docs/adding-a-task.md (ClinicalQA answer parsers).
"""

from __future__ import annotations

import unicodedata
from typing import Mapping, Sequence

from pipelines.tasks.clinicalqa.parsing.tokens import DEFAULT_OPTIONS, ParseResult, is_empty, normalise_reply
from pipelines.tasks.clinicalqa.parsing.v4_base import NONE_KEYS, read_like_v3
from pipelines.tasks.clinicalqa.parsing.v4_forms import (
    bracketed_last_line,
    cjk_statements,
    label_statements,
    sentence_statements,
)
from pipelines.tasks.clinicalqa.parsing.v4_layout import rejected_then_final, renamed, table_verdict
from pipelines.tasks.clinicalqa.parsing.v4_tokens import normalise_text, scan
from pipelines.tasks.clinicalqa.parsing.v4_v3rules import NONE_OF_THE_OPTIONS

PARSER_VERSION = "v4"

_RULES = (cjk_statements, sentence_statements, label_statements)


def _new_styles(body: str, opts: tuple[str, ...], texts: Mapping[str, str] | None) -> ParseResult:
    """The styles v3 missed, read on ``body`` (normalised, other names for options already renamed)."""
    found = {}
    for rule in _RULES:
        for s in rule(body, opts, texts):
            found.setdefault(s.position, s)
    if found:
        last = found[max(found)]
        return ParseResult(last.letter, "ok") if last.letter is not None else ParseResult(None, "ambiguous")
    if (letter := table_verdict(body, opts)) is not None:
        return ParseResult(letter, "ok")
    if (last_line := bracketed_last_line(body, opts)) is not None:
        return ParseResult(last_line.letter, "ok")
    return ParseResult(None, "no_answer")


# What v4 reads of a reply longer than READ_LIMIT characters after its reasoning: the first 2,048
# and the last 6,144, cut at line breaks. A reply within clinicalqa@0's 2,048-token budget (Korean
# runs to about 4,000 characters) fits whole, and the answer the prompt asks for ends the reply; a
# longer one (an author's package may write 64 KiB) costs no more than this.
READ_LIMIT = 8_192
_HEAD, _TAIL = 2_048, 6_144


def _bounded(text: str) -> tuple[str, str]:
    """The text v4 reads and its normalised body: the reply itself, or its head and tail when too long."""
    body = normalise_reply(text)
    if len(body) <= READ_LIMIT:
        return text, body
    head, tail = body[:_HEAD], body[-_TAIL:]
    head = head[: head.rfind("\n")] if "\n" in head else head
    tail = tail[tail.find("\n") + 1 :] if "\n" in tail[:-1] else tail
    kept = f"{head}\n\n{tail}"
    return kept, normalise_reply(kept)


def parse_answer_v4(
    text: str | None,
    options: Sequence[str] = DEFAULT_OPTIONS,
    option_texts: Mapping[str, str] | None = None,
) -> ParseResult:
    """Read the option a reply commits to; see the module docstring for what v4 adds to v3.

    ``option_texts`` maps option letters to their texts, as for v2 and v3.
    """
    if is_empty(text):
        return ParseResult(None, "empty")
    opts = tuple(options)
    texts = {k: normalise_text(v) for k, v in option_texts.items() if k in opts} if option_texts else None
    text, body = _bounded(text)
    base = read_like_v3(text, opts, option_texts, texts)
    none_fits = base.status == "no_answer" and bool(scan(NONE_OF_THE_OPTIONS, body, NONE_KEYS))
    if base.status in ("ok", "no_answer") and not none_fits:
        final = rejected_then_final(body, opts, base.prediction)
        if final is not None:
            return ParseResult(final, "ok")
    if base.status != "no_answer" or none_fits:
        return base
    variant = renamed(text, opts)
    by_name = ParseResult(None, "no_answer")
    if variant != unicodedata.normalize("NFKC", text):
        by_name = read_like_v3(variant, opts, option_texts, texts)
    variant_body = normalise_reply(variant)
    styles = _new_styles(variant_body, opts, texts)
    if by_name.status == "ok" and styles.status == "ok" and by_name.prediction != styles.prediction:
        return ParseResult(None, "ambiguous")  # two styles name different options
    if by_name.status == "ok":
        return by_name
    return styles
