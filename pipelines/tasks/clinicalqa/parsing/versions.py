"""The one table of answer parser versions: the only place that maps a version string to a parser.

A result names the parser version that scored it (a task spec's ``[choice] parser``), and every
caller that parses a reply goes through :func:`parse_answer` here (``score.predictions_table``,
which scoring a run, ``medbench score`` and replayed outputs all use), so a version string means
the same parser everywhere. A new version is one new module (importing ``tokens`` and, at most, the
public names of the live version it builds on) plus one entry in ``PARSERS``; an old entry is never
changed, because a task version that selects it must re-score to the results it published.

A live version never calls a frozen one (v1, v2): it reimplements what it takes from it in its own
modules, so that its cost and its fixes are its own. v3 reimplements v2's reading (``v3_base`` and
``v3_reading`` on the scanners ``v3_scan`` and ``v3_find``), in time near linear in a reply's length, with answers proven identical to the
v3 that called v2 (tests/unit/pipelines/test_parsing_v3_equality.py). Callers parse a batch in one
child process under a memory cap and a time limit (``parse_batch``).
v4 imports no earlier version at all: it reimplements v3's reading in its own modules (``v4_*``), so
that it stays near linear whatever v2 and v3 cost.

Its file name is shared on purpose: the answer parser's versions; ``warehouse.versions`` is about
published warehouse versions.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from pipelines.tasks.clinicalqa.parsing import v1, v2, v3, v4
from pipelines.tasks.clinicalqa.parsing.tokens import ParseResult

# A parser reads ``(text, options)``; those in TAKES_OPTION_TEXTS also ``option_texts``.
Parser = Callable[..., ParseResult]

PARSERS: dict[str, Parser] = {
    v1.PARSER_VERSION: v1.parse_answer_v1,
    v2.PARSER_VERSION: v2.parse_answer_v2,
    v3.PARSER_VERSION: v3.parse_answer_v3,
    v4.PARSER_VERSION: v4.parse_answer_v4,
}
# The versions that also take the items' option texts (``parse(text, options, option_texts)``).
TAKES_OPTION_TEXTS: set[str] = {v2.PARSER_VERSION, v3.PARSER_VERSION, v4.PARSER_VERSION}
# The version of a score whose caller names none (``predictions_table``'s default): the first.
DEFAULT_VERSION = v1.PARSER_VERSION


def parser_for(version: str) -> Parser:
    """The parser of ``version``; a ValueError naming the known versions for any other."""
    try:
        return PARSERS[version]
    except KeyError:
        raise ValueError(f"unknown answer parser {version!r}; known: {', '.join(sorted(PARSERS))}") from None


def parse_answer(
    text: str | None, options: Sequence[str], version: str, option_texts: Mapping[str, str] | None = None
) -> ParseResult:
    """Read the option a reply commits to with parser ``version``.

    ``option_texts`` (option letter -> text) reach only the versions that read them
    (``TAKES_OPTION_TEXTS``); the others are called exactly as when they were published.
    """
    parse = parser_for(version)
    if version in TAKES_OPTION_TEXTS:
        return parse(text, options, option_texts)
    return parse(text, options)
