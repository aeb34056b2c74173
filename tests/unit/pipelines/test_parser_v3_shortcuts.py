"""Parser v3's shortcuts give what the work they skip would give, and skip it (issue 35, item 4).

v3 reads a long reply near linearly with a small factor (docs/adding-a-task.md, "Answer parsing")
through four shortcuts, each compared here with the work it replaces, on long generated replies
(over ``v3_find._LONG``, where the shortcuts apply):

- the tokens a tail follows are scanned for only near the tail's anchors, from sync points
  (``v3_find.tokens_followed_by``): the same positions as one scan of the whole reply;
- v2's final-statement rule reads statements lazily (``v3_reading``): the same answer as reading
  every statement and applying the rule;
- the first hedges of a long reply are read directly, later ones from indexes (``v3_scan``): the
  same hedge either way;
- a pattern is skipped when the reply lacks its words (``v3_find.scan``), also where a
  case-insensitive pattern matches a character that ``str.lower`` keeps (``ı``, ``İ``).

The corpus-equality test (``test_parsing_v3_equality.py``) compares whole parses with the oracle;
this one also counts the work: on the parse attack's 64 KiB replies v3 builds a handful of tokens,
where it built one for every statement (thousands) before. Tests never assert wall-clock time;
``bench/parse_adversarial.py`` prints the timings.
"""

from __future__ import annotations

import random

import pytest
from support.parser_inputs import FAMILIES, OPTION_TEXTS, mixed
from support.parser_v3_oracle import parse_answer_v3 as oracle

from pipelines.tasks.clinicalqa.parsing import (
    tokens,
    v3_base,
    v3_find,
    v3_reading,
    v3_rules,
    v3_scan,
)
from pipelines.tasks.clinicalqa.parsing.v3 import parse_answer_v3
from pipelines.tasks.clinicalqa.parsing.v3_scan import normalise_text
from pipelines.tasks.clinicalqa.parsing.v4 import parse_answer_v4

OPTIONS = ("A", "B", "C", "D", "E")
# Pieces that meet the shortcuts' edges: long bracket and bold runs (sync points), blanks before
# 번, blanks that are not spaces, every tail's anchor, and statements of every finder.
PIECES = ("A", "B", "c", "3", "(", "((((", "**", "__", "「", "」", ")", " 번", "번째", " ", "   ", "\t", "\n", "\r", "\u2028",
          "x", "가", "이", "는", "을", "답", "정답", "정답: ", " is the answer", "가 정답", "이 정답입니다", "입니다.", "을 선택합니다",
          " is correct.", "Option ", "Therefore, ", ".", "。", "!", ", ", " 또는 ", "아니라 ", "만약 ", "might ", "\\boxed{D}",
          "C: 정답", "- B. Metformin – correct", "B: 오답, ", "가장 적절한 것은 ", "I would choose ", "metformin", "경구 항생제")


def _long_replies(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        pieces = tuple(rng.sample(PIECES, rng.randint(4, 20)))
        out.append(mixed(rng.randint(4_200, 9_000), rng, pieces))
    return out


def _whole_scan(text: str, tails: tuple, every_start: bool) -> list[int]:
    found = list(v3_find._followed(OPTIONS, tails, every_start).finditer(text))
    return [m.start() for m in found] if every_start else [m.start() for m in found if m.group("followed") is not None]


@pytest.mark.parametrize("seed", [1, 2])
def test_tokens_near_anchors_are_those_of_the_whole_scan(seed: int) -> None:
    postfix = ((v3_base._POSTFIX_KOREAN, tokens.POSTFIX_ENGLISH), v3_base._POSTFIX_ANCHORS, True)
    sentence = (v3_rules._SENTENCE_TAILS, v3_rules._SENTENCE_ANCHORS, False)
    for text in _long_replies(60, seed):
        for tails, anchors, every_start in (postfix, sentence):
            assert v3_find.tokens_followed_by(text, OPTIONS, tails, anchors, every_start) == _whole_scan(
                text, tails, every_start
            ), text[:200]


def _every_statement(body: str, texts: dict[str, str] | None) -> tokens.ParseResult | None:
    """v2's final-statement rule over every statement, read in order (what v3 did before the lazy reading)."""
    found: dict[int, v3_base.Statement] = {}
    for find, read in v3_base.FINDERS:
        for candidate in find(body, OPTIONS):
            if (s := read(body, candidate, OPTIONS, texts)) is not None:
                found.setdefault(s.position, s)
    if not found:
        return None
    statements = [found[p] for p in sorted(found)]
    plain = [s for s in statements if not s.hedged]
    anchored = [s for s in plain if s.anchored]
    if anchored:
        final = anchored[-1]
        if any(s.prediction is None and final.prediction in s.alternatives for s in plain if s.position > final.position):
            return tokens.ParseResult(None, "ambiguous")
    else:
        final = plain[-1] if plain else statements[-1]
    if final.prediction is None or (final.hedged and final.hedge_alternatives):
        return tokens.ParseResult(None, "ambiguous")
    return tokens.ParseResult(final.prediction, "ok")


# Statements that a conditional before them voids, unless they name several options first.
VOIDED_UNITS = ("만약 정답: A ", "만약 정답: A 또는 B ", "만약 정답: A (B) ", "만약 정답: A Insulin glargine ", "일부 교재에서는 정답: A, B ",
                "if the answer is A or B, ", "만약 정답: A\n정답: C ")


@pytest.mark.parametrize("seed", [3, 4])
def test_the_lazy_reading_gives_the_rule_over_every_statement(seed: int) -> None:
    texts = {k: normalise_text(v) for k, v in OPTION_TEXTS.items()}
    rng = random.Random(seed)
    repeated = [(unit * 500)[: rng.randint(4_200, 6_000)] + rng.choice(["", "정답: C", " D"]) for unit in VOIDED_UNITS]
    for i, text in enumerate(_long_replies(40, seed) + repeated):
        body = tokens.normalise_reply(text)
        given = texts if i % 2 else None
        assert v3_reading._Reading(body, OPTIONS, given).final() == _every_statement(body, given), text[:200]


def test_hedges_read_directly_and_from_indexes_agree() -> None:
    rng = random.Random(5)
    for text in _long_replies(20, 5):
        for _ in range(40):
            position = rng.randint(0, len(text))
            rest_from = min(len(text), position + rng.randint(0, 30))
            v3_scan._READS.clear()
            direct = v3_scan.statement_hedge(text, position, rest_from)
            v3_scan._READS[text] = v3_scan._DIRECT_READS
            assert v3_scan.statement_hedge(text, position, rest_from) == direct, (text[:200], position, rest_from)


@pytest.mark.parametrize("text", [
    "정답: A\nWAİT, the answer is C", "정답: A\nwaıt, the answer is C", "정답: A\n\u212aorrection: the answer is C",
    "None of the optıons fits.", "I'd go wıth D.", "Optıon C is correct.", "C ıs the answer", '{"answer": "B"}',
    "NONE OF THE OPTIONS", "The İs answer: B",
])
def test_words_are_found_in_any_case(text: str) -> None:
    """The words that let a pattern be skipped are looked for as a case-insensitive pattern matches them."""
    for texts in (None, OPTION_TEXTS):
        assert parse_answer_v3(text, OPTIONS, texts) == oracle(text, OPTIONS, texts)


def test_an_attack_reply_costs_a_handful_of_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parse attack's 64 KiB replies: v3 read one token per statement (thousands) before the lazy
    reading and the windowed scans; now a handful, whatever the reply's length."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return v3_scan.token_at(*args, **kwargs)

    for module in (v3_base, v3_rules, v3_reading):
        monkeypatch.setattr(module, "token_at", counted)
    rng = random.Random(35)
    for name in ("attack_a", "attack_korean", "blank_runs"):
        text = FAMILIES[name](65_536, rng)
        calls.clear()
        parse_answer_v3(text, OPTIONS, OPTION_TEXTS)
        assert len(calls) < 50, f"{name}: {len(calls)} tokens read"


@pytest.mark.parametrize("unit", VOIDED_UNITS)
def test_v4_skips_voided_statements_as_v3_does(unit: str) -> None:
    """v4 takes the same shortcut (``v4_reading.Reading.voided``), and reads these replies as v3 does:
    conditional and reported statements stay void, unless they name several options."""
    for tail in ("", "정답: C", " D"):
        text = (unit * 500)[:5_000] + tail
        for texts in (None, OPTION_TEXTS):
            assert parse_answer_v4(text, OPTIONS, texts) == parse_answer_v3(text, OPTIONS, texts), (unit, tail, texts)
