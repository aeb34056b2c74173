"""The one table of parser versions: ``parse_answer(text, options, version)`` is what callers use.

A version string must select the same parser everywhere (a result names its parser version, and
re-scoring must reproduce it), so the mapping lives in one table; an unknown version fails with the
list of known ones instead of falling back to some parser.
"""

from __future__ import annotations

import pytest

from pipelines.tasks.clinicalqa.parsing.tokens import DEFAULT_OPTIONS, ParseResult
from pipelines.tasks.clinicalqa.parsing.v1 import parse_answer_v1
from pipelines.tasks.clinicalqa.parsing.v2 import parse_answer_v2
from pipelines.tasks.clinicalqa.parsing.v3 import parse_answer_v3
from pipelines.tasks.clinicalqa.parsing.v4 import parse_answer_v4
from pipelines.tasks.clinicalqa.parsing.versions import DEFAULT_VERSION, PARSERS, TAKES_OPTION_TEXTS, parse_answer

TEXTS = {"A": "Ampicillin", "B": "Metformin", "C": "경구 항생제", "D": "수술", "E": "경과 관찰"}


def test_unknown_version_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"^unknown answer parser 'v5'; known: v1, v2, v3, v4$"):
        parse_answer("정답: C", DEFAULT_OPTIONS, "v5")


def test_each_version_string_selects_its_parser() -> None:
    assert PARSERS == {"v1": parse_answer_v1, "v2": parse_answer_v2, "v3": parse_answer_v3, "v4": parse_answer_v4}
    assert DEFAULT_VERSION == "v1" and TAKES_OPTION_TEXTS == {"v2", "v3", "v4"}
    # "정답: 2번 (C)": v1 reads the number, v2 sees the number and the letter disagree
    assert parse_answer("정답: 2번 (C)", DEFAULT_OPTIONS, "v1") == ParseResult("B", "ok")
    assert parse_answer("정답: 2번 (C)", DEFAULT_OPTIONS, "v2") == ParseResult(None, "ambiguous")


def test_option_texts_reach_only_the_versions_that_read_them() -> None:
    assert parse_answer("B. Metformin", DEFAULT_OPTIONS, "v2", TEXTS) == ParseResult("B", "ok")
    assert parse_answer("B. Metformin", DEFAULT_OPTIONS, "v2") == ParseResult(None, "no_answer")
    assert parse_answer("B. Metformin", DEFAULT_OPTIONS, "v1", TEXTS) == ParseResult(None, "no_answer")
    assert parse_answer("The answer is metformin.", DEFAULT_OPTIONS, "v3", TEXTS) == ParseResult("B", "ok")
    assert parse_answer("最合适的治疗是 Metformin。", DEFAULT_OPTIONS, "v4", TEXTS) == ParseResult("B", "ok")
    assert parse_answer("最合适的治疗是 Metformin。", DEFAULT_OPTIONS, "v3", TEXTS) == ParseResult(None, "no_answer")


def test_options_reach_the_parser() -> None:
    four = ("A", "B", "C", "D")
    for version in PARSERS:
        assert parse_answer("정답: 4", four, version) == ParseResult("D", "ok")
        assert parse_answer("정답: 5", four, version) == ParseResult(None, "no_answer")
        assert parse_answer(None, four, version) == ParseResult(None, "empty")
