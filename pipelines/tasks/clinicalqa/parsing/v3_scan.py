"""Token and hedge rules of answer parser v3: v2's (``parsing.v2_rules``), reimplemented with bounded work.

v3 reads replies exactly as v2's rules did (the same tokens, quantities, abbreviated names, option
texts after a label, conditionals and reported speech), and ``tests/unit/pipelines/test_parsing_v3_equality.py``
proves it against a frozen copy of the v3 that called v2. What changes is the cost: v2 compared the
*whole rest of the line* after every token with the option texts, so a reply that is one long line
of tokens (``"A " * 8000``) cost the square of its length (7.9 s for 16 KB). Here only as much of the
line is normalised as the longest option text needs (:func:`line_head`), so each token costs a
bounded amount and a reply is read in time near linear in its length (docs/adding-a-task.md).

v2's modules are frozen (their results must stay reproducible), so v3 owns this copy and never
imports v2: a later version builds on v3's public names the same way.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Mapping

from pipelines.tasks.clinicalqa.parsing.tokens import (
    HANGUL_AFTER_DIGIT,
    HANGUL_AFTER_LETTER,
    HEDGE,
)
from pipelines.tasks.clinicalqa.parsing.v3_find import token_pattern

Hedge = Literal["plain", "soft", "void"]


@dataclass(frozen=True)
class Token:
    value: str  # the option letter it stands for
    start: int
    end: int
    labelled: bool = False  # bracketed, bold, or followed by a label mark: "(C)", "C.", "C:"
    text_match: bool = False  # the text after it is this option's text (option texts given)
    conflict: str | None = None  # another option whose text follows it: letter and text disagree


_NUMBER_CONTINUES = re.compile(r"[.,]\d")  # "1.5", "2,000"
_RANGE_CONTINUES = re.compile(r"[ \t]*[-–~][ \t]*\d|:\d")  # "2-3", "2 ~ 4", "1:2"
_NAME_HYPHEN = re.compile(r"-[A-Za-z가-힣]")  # "B-cell"
_ABBREVIATED = re.compile(r"\.[ \t]*([a-z]+)")  # "E. coli", "C. ceftriaxone"
_LABEL_MARK = re.compile(r"[ \t]*[.):\-–—]")

_UNIT_EN = re.compile(
    r"[ \t]*(?:%|percent\b|°|(?:weeks?|wks?|days?|d|hours?|hrs?|h|minutes?|mins?|seconds?|secs?"
    r"|months?|mos?|years?|yrs?|y/?o|mg|mcg|μg|ug|ng|g|kg|ml|l|dl|cc|mmhg|cmh2o|bpm|mmol|mol|meq|iu"
    r"|units?|u|times|doses?|tablets?|tabs?|capsules?|pills?|cm|mm|m|km|degrees?|breaths?|beats?"
    r"|patients?|cases?|cycles?|drops?|puffs?|packs?|pack-years?|cigarettes?|lbs?|pounds?"
    r"|inch(?:es)?|feet|ft|x)(?![A-Za-z]))",
    re.IGNORECASE,
)
_UNIT_KO = re.compile(
    r"[ \t]*(?:주일|주간|주|일간|일|시간|분|초|개월|달|년간|년|세|살|회|정|알약|알|개|명|가지|차례|차|배|도"
    r"|킬로그램|킬로|밀리그램|밀리리터|밀리미터|밀리|그램|리터|단위|포|병|잔|갑|캡슐|센티미터|센티|미터"
    r"|퍼센트|프로|박|층|인분|쌍|장)"
    r"(?:(?![가-힣])|(?=[간째동안마씩후전이가을를은는의에로만까부당내]))"
)

# Abbreviated binomial names ("E. coli"), and "A. fib": the lower-case word after "X." that is a
# name, not an option text. Only these are refused after an answer marker.
_EPITHETS = frozenset(
    """coli aureus epidermidis saprophyticus lugdunensis pneumoniae pyogenes agalactiae viridans
    mutans bovis faecalis faecium difficile diff perfringens botulinum tetani diphtheriae
    monocytogenes anthracis cereus pylori jejuni influenzae ducreyi pertussis meningitidis
    gonorrhoeae catarrhalis aeruginosa baumannii cepacia maltophilia typhi typhimurium enteritidis
    sonnei flexneri dysenteriae boydii enterocolitica pestis tularensis cholerae vulnificus
    parahaemolyticus trachomatis psittaci burgdorferi pallidum interrogans tuberculosis leprae
    avium kansasii marinum israelii asteroides albicans glabrata auris neoformans gattii fumigatus
    jirovecii carinii capsulatum immitis dermatitidis brasiliensis falciparum vivax ovale malariae
    knowlesi gondii vaginalis lamblia intestinalis histolytica mansoni haematobium japonicum
    vermicularis lumbricoides stercoralis trichiura duodenale americanus solium saginata
    granulosus cruzi brucei donovani marcescens mirabilis vulgaris freundii cloacae aerogenes
    oxytoca multocida henselae quintana burnetii rickettsii prowazekii tsutsugamushi pneumophila
    hominis genitalium urealyticum canis acnes elegans melanogaster cerevisiae sp spp fib""".split()
)


def normalise_text(text: str) -> str:
    """Case- and punctuation-blind form of an option text, for comparing it with a reply."""
    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


# Where a text may be cut without changing how its two halves normalise: a character that NFKC keeps
# as it is, that never composes with the character before it and that is a word character, so that
# normalise(a + b) starts with normalise(a) whenever the cut's left half is not blank.
_CUT_OR_LINE_END = re.compile("[\nA-Za-z0-9\uac00-\ud7a3\u4e00-\u9fff]")
_HEAD_MARGIN = 64  # characters read beyond what the longest option text needs, before doubling
_LONG = 4096  # characters: a reply this long is read with bounded steps and indexes, a shorter one directly


def _folded(text: str) -> str:
    """``normalise_text`` without its final strip: runs of non-word characters become one space."""
    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).casefold())


def line_head(text: str, start: int, need: int) -> str:
    """``normalise_text`` of ``text`` from ``start`` to its line's end, or a prefix of it at least ``need`` long.

    What ``startswith`` of an option text (at most ``need`` characters) sees is the same either way;
    reading the whole line at every token is what made v2 quadratic. The part read grows by doubling
    until it holds ``need`` characters, and is cut only at a clean cut (``_CUT_OR_LINE_END``): the
    first one after the read part is at most the next answer token away, so the reads of successive
    tokens overlap by a bounded amount.
    """
    if len(text) < _LONG:  # an ordinary reply: the whole line costs less than reading it in steps
        newline = text.find("\n", start)
        return normalise_text(text[start : newline if newline >= 0 else len(text)])
    step = max(need, 1) + _HEAD_MARGIN
    while True:
        stop = start + step
        newline = text.find("\n", start, stop)
        if newline >= 0:
            return normalise_text(text[start:newline])
        found = _CUT_OR_LINE_END.search(text, stop)
        if found is None:
            return normalise_text(text[start:])
        if found.group() == "\n":
            return normalise_text(text[start : found.start()])
        head = _folded(text[start : found.start()]).lstrip()
        if len(head) >= need and head:
            return head  # the rest starts with a word character: nothing of it changes these characters
        step *= 2


def _text_agreement(text: str, end: int, value: str, option_texts: Mapping[str, str] | None) -> tuple[bool, str | None]:
    """Does the rest of the line after a label name this option's text, or another's?"""
    if not option_texts:
        return False, None
    seg = line_head(text, end, max(len(t) for t in option_texts.values()))
    if not seg:
        return False, None
    own = option_texts.get(value, "")
    if own and seg.startswith(own):
        return True, None
    others = [k for k, t in option_texts.items() if k != value and t and seg.startswith(t)]
    return False, (max(others, key=lambda k: len(option_texts[k])) if others else None)


def token_at(
    text: str,
    pos: int,
    options: tuple[str, ...],
    *,
    plain_lower: bool = False,
    after_marker: bool = False,
    option_texts: Mapping[str, str] | None = None,
) -> Token | None:
    """The answer token starting exactly at ``pos``, if there is one and it ends cleanly.

    v1's rules (word boundary, Korean particles, lower-case letters only bracketed, bold or
    ``plain_lower`` at a line end) plus units, ranges, and the after-marker label with text.
    ``option_texts`` must be normalised with :func:`normalise_text`.
    """
    m = token_pattern(options).match(text, pos)
    if m is None:
        return None
    end = m.end()
    raw = m.group("value")
    counted = raw.isdigit() and not m.group("bun") and not m.group("close")
    if _NUMBER_CONTINUES.match(text, end) or _NAME_HYPHEN.match(text, end):
        return None
    if raw.isdigit() and (_RANGE_CONTINUES.match(text, end) or text[end : end + 1] == "%"):
        return None
    if counted and (_UNIT_EN.match(text, end) or _UNIT_KO.match(text, end)):
        return None
    following = text[end : end + 2]
    if following[:1] and "가" <= following[0] <= "힣":
        allowed = HANGUL_AFTER_DIGIT if raw.isdigit() and not m.group("bun") else HANGUL_AFTER_LETTER
        if following[0] not in allowed or following == "가지":
            return None
    elif following[:1].isalnum():
        return None
    bracketed = bool(m.group("open")) or bool(m.group("close"))
    if raw.islower() and not (bracketed or (plain_lower and re.match(r"\s*[.!]?[ \t]*(?:\n|$)", text[end:]))):
        return None
    value = options[int(raw) - 1] if raw.isdigit() else raw.upper()
    own, other = _text_agreement(text, end, value, option_texts)
    abbreviated = _ABBREVIATED.match(text, end)
    if abbreviated and not own and other is None and (not after_marker or abbreviated.group(1) in _EPITHETS):
        return None
    labelled = bracketed or bool(_LABEL_MARK.match(text, end))
    return Token(value, m.start(), end, labelled=labelled, text_match=own, conflict=None if own else other)


_SENTENCE_END = re.compile(r"[.!。;\n]")
_CLAUSE_REACH = 200  # characters; bounds the work on a reply stuck in one endless sentence

_CONDITIONAL = re.compile(
    r"만약|만일|가령|(?<!그렇)(?<!고른)(?<!꼽는)(?<!택한)다면|(?<!고르)(?<!꼽으)(?<!택하)라면|더라면|(?:였|었|았)으면"
    r"|(?:인|일)\s*경우|(?<!even )(?<!as )\bif\b(?!\s+(?:I|we)\s+(?:had|have)\s+to\b|\s+forced\b)"
    r"|\bunless\b|\bsuppos(?:e|ing)\b|\bassuming\b"
    r"|\b(?:were|had)\s+(?:the\s+patient|she|he)\b",
    re.IGNORECASE,
)
_REPORTED = re.compile(
    r"(?:일부|어떤|몇몇|다른|과거|예전|옛|기존|외국)\s*(?:[가-힣]+\s+)?"
    r"(?:교재|교과서|문헌|책|자료|참고서|해설|기출|출처|사람|학생|의견|가이드라인|지침|문제집|답안)"
    r"|(?:이)?라고\s*(?:도\s*)?(?:합|한다|하는|했|하기|하며|하지|하나|말|주장|설명|기술|서술|보고|알려|나와|되어|적혀|쓰여|소개|제시)"
    r"|라고도|라는\s*(?:견해|의견|주장|설|말|해석)|다고\s*(?:합|한다|하는|했|하기|하며|하지|주장|말|알려|보고|나와)"
    r"|\b(?:some|certain|older|other|many|several)\s+(?:\w+\s+)?(?:textbooks?|books?|sources?|references?"
    r"|authors?|guidelines?|students?|people|clinicians|physicians|experts|texts|resources"
    r"|question\s+banks?|answer\s+keys?)\b"
    r"|\b(?:is|are)\s+(?:often\s+|sometimes\s+|commonly\s+|widely\s+)?(?:said|claimed|reported|believed)\b"
    r"|\baccording\s+to\s+(?:some|older|certain|other)\b",
    re.IGNORECASE,
)


def sentence_rest(text: str, pos: int) -> str:
    """From ``pos`` to the end of its sentence (``.``, ``!``, ``;`` or a line break), at most 1,000 characters."""
    stop = pos + 5 * _CLAUSE_REACH
    m = _SENTENCE_END.search(text, pos, stop)
    return text[pos : m.start() if m else stop]


def sentence_before(text: str, pos: int) -> str:
    """From the start of the sentence holding ``pos`` up to ``pos`` (at most ``_CLAUSE_REACH`` back)."""
    return text[max(last_of(text, ".!?。;\n", pos) + 1, pos - _CLAUSE_REACH, 0) : pos]


_CLAUSE_TURN = re.compile(
    r"[(\[]|지만|그러나|그런데|반면|므로|때문에|따라서|그러므로|결국|\b(?:but|however|since|because|so|thus|therefore)\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)  # pure; a reply that repeats itself (a looping model) repeats its clauses
def hedge_of(before: str, rest: str) -> Hedge:
    """``void`` for a conditional or reported statement, ``soft`` for v1's hedges, else ``plain``.

    v1's hedges are looked for in the rest of the sentence as in v1 (up to 1,000 characters, which
    only a reply stuck in a loop reaches).

    A conditional or a report reaches a statement only within its clause (a bracket or a turn such
    as ``지만``, ``but`` ends it): in ``소아인 경우 A이지만, 성인이므로 정답은 C`` and ``..., but the
    answer is C`` the clause turns away from it before the statement.
    """
    before, rest_all, rest = before[-_CLAUSE_REACH:], rest, rest[:_CLAUSE_REACH]
    turns = list(_CLAUSE_TURN.finditer(before))
    near_before = before[turns[-1].end() :] if turns else before
    turn_after = _CLAUSE_TURN.search(rest)
    near_rest = rest[: turn_after.start()] if turn_after else rest
    if any(p.search(t) for p in (_CONDITIONAL, _REPORTED) for t in (near_before, near_rest)):
        return "void"
    return "soft" if HEDGE.search(rest_all) else "plain"


# Literals that every match of a pattern contains (with the pattern's own flags): a slice holding none
# of them cannot match, which an index of their positions over the whole reply answers in O(log n).
_VOID_TRIGGERS = re.compile(
    r"(?=(만약|만일|가령|다면|라면|으면|경우|if|unless|suppos|assuming|were|had"
    r"|일부|어떤|몇몇|다른|과거|예전|옛|기존|외국|라고|라는|다고|some|certain|older|other|many|several"
    r"|said|claimed|reported|believed|according))",
    re.IGNORECASE,
)
_HEDGE_TRIGGERS = re.compile(r"(?=(수|지도|까|\?|might|could|possibly|perhaps))", re.IGNORECASE)


class _Occurrences:
    """Where a trigger regex's literals occur in one text: does any lie wholly inside ``[a, b)``?"""

    def __init__(self, pattern: re.Pattern[str], text: str):
        spans = [(m.start(), m.start() + len(m.group(1))) for m in pattern.finditer(text)]
        self.starts = [s for s, _ in spans]
        self.min_end = [e for _, e in spans]  # the smallest end among this occurrence and every later one
        for i in range(len(spans) - 2, -1, -1):
            self.min_end[i] = min(self.min_end[i], self.min_end[i + 1])

    def within(self, a: int, b: int) -> bool:
        i = bisect_left(self.starts, a)
        return i < len(self.starts) and self.min_end[i] <= b


_INDEXES: dict[str, tuple[_Occurrences, _Occurrences]] = {}


def _indexes(text: str) -> tuple[_Occurrences, _Occurrences]:
    found = _INDEXES.get(text)
    if found is None:
        if len(_INDEXES) >= 8:
            _INDEXES.clear()
        found = _INDEXES[text] = (_Occurrences(_VOID_TRIGGERS, text), _Occurrences(_HEDGE_TRIGGERS, text))
    return found


_DIRECT_READS = 32  # statements of one long reply whose hedges are read directly, before its indexes are built
_READS: dict[str, int] = {}


def _direct(text: str) -> bool:
    """Is this one of the first ``_DIRECT_READS`` hedges asked of ``text``? Most long replies are read
    at a handful of statements (``parsing.v3_reading``); the indexes cost a scan of the whole reply."""
    reads = _READS.get(text, 0)
    if reads >= _DIRECT_READS:
        return False
    if len(_READS) >= 8:
        _READS.clear()
    _READS[text] = reads + 1
    return True


def statement_hedge(text: str, position: int, rest_from: int) -> Hedge:
    """``hedge_of(sentence_before(text, position), sentence_rest(text, rest_from))``, in bounded time.

    The same answer always; the regular expressions run only on a clause that holds one of their
    trigger literals, so a reply of thousands of statements does not pay five scans of a 200- to
    1,000-character clause for each.
    """
    floor = max(0, position - _CLAUSE_REACH)
    before_start = max(max(text.rfind(c, floor, position) for c in ".!?。;\n") + 1, floor)
    stop = rest_from + 5 * _CLAUSE_REACH
    m = _SENTENCE_END.search(text, rest_from, stop)
    rest_end = min(m.start() if m else stop, len(text))
    if len(text) < _LONG or _direct(text):  # building the indexes would cost more than it saves
        return hedge_of(text[before_start:position], text[rest_from:rest_end])
    void, hedge = _indexes(text)
    if void.within(before_start, position) or void.within(rest_from, min(rest_from + _CLAUSE_REACH, rest_end)):
        return hedge_of(text[before_start:position], text[rest_from:rest_end])
    return "soft" if hedge.within(rest_from, rest_end) and HEDGE.search(text[rest_from:rest_end]) else "plain"


_BOUNDARIES: dict[tuple[str, str], list[int]] = {}


def _boundaries(text: str, chars: str) -> list[int]:
    key = (chars, text)
    found = _BOUNDARIES.get(key)
    if found is None:
        if len(_BOUNDARIES) >= 16:
            _BOUNDARIES.clear()
        found = _BOUNDARIES[key] = [m.start() for m in re.finditer(f"[{re.escape(chars)}]", text)]
    return found


def last_of(text: str, chars: str, pos: int) -> int:
    """``max(text.rfind(c, 0, pos) for c in chars)``, from an index of ``chars`` built once per text."""
    if len(text) < _LONG:
        return max(text.rfind(c, 0, pos) for c in chars)
    found = _boundaries(text, chars)
    i = bisect_left(found, pos)
    return found[i - 1] if i else -1


def line_end(text: str, pos: int) -> int:
    """``text.find("\\n", pos)``, or the text's length when none follows, from the same index."""
    if len(text) < _LONG:
        end = text.find("\n", pos)
        return len(text) if end < 0 else end
    found = _boundaries(text, "\n")
    i = bisect_left(found, pos)
    return found[i] if i < len(found) else len(text)
