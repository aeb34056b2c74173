"""Token and hedge rules of answer parser v4, copied from v2's (``parsing.v2_rules``) and made near linear.

v4 reads every answer v3 reads, the same way, but shares no code path with the frozen v2 or the
v3 being rewritten: these are v2's token rules (units, ranges, abbreviated names, a label's own
text, conditionals and reported speech, v1's soft hedges) with the same vocabulary, changed only
where v2 did work proportional to the whole reply for every token:

- a label's text is compared with the options' texts over a bounded window after it (the longest
  option text, four times over, plus 64 characters), not the whole rest of its line;
- nothing slices the reply from a position to its end (``text[end:]``): patterns match in place;
- :func:`gated_starts` finds, in one regular-expression scan, only the tokens followed by what a
  rule needs after them (an answer word, a copula), so that a reply made of thousands of bare
  letters costs one scan, not one Python call per letter.

See docs/adding-a-task.md (ClinicalQA answer parsers).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from dataclasses import dataclass
from typing import Literal, Mapping

from pipelines.tasks.clinicalqa.parsing.tokens import HANGUL_AFTER_DIGIT, HANGUL_AFTER_LETTER, HEDGE, token_pattern

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
_LINE_END_AFTER = re.compile(r"\s*[.!]?[ \t]*(?:\n|$)")

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


_NON_WORD = re.compile(r"[\W_]+")


@lru_cache(maxsize=4096)  # pure; windows of a reply that repeats itself repeat too
def normalise_text(text: str) -> str:
    """Case- and punctuation-blind form of an option text, for comparing it with a reply."""
    return _NON_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _text_agreement(text: str, end: int, value: str, option_texts: Mapping[str, str] | None) -> tuple[bool, str | None]:
    """Does the rest of the line after a label name this option's text, or another's?"""
    if not option_texts:
        return False, None
    window = end + 64 + 4 * max((len(t) for t in option_texts.values()), default=0)
    line_end = text.find("\n", end, window)
    seg = normalise_text(text[end : line_end if line_end >= 0 else window])
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
    if raw.islower() and not (bracketed or (plain_lower and _LINE_END_AFTER.match(text, end))):
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
    floor = max(0, pos - _CLAUSE_REACH)
    start = max(max(text.rfind(c, floor, pos) for c in ".!?。;\n") + 1, floor)
    return text[start:pos]


_CLAUSE_TURN = re.compile(
    r"[(\[]|지만|그러나|그런데|반면|므로|때문에|따라서|그러므로|결국|\b(?:but|however|since|because|so|thus|therefore)\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)  # pure; a reply that repeats itself (a looping model) repeats its windows
def hedge_of(before: str, rest: str) -> Hedge:
    """``void`` for a conditional or reported statement, ``soft`` for v1's hedges, else ``plain``.

    v1's hedges are looked for in the rest of the sentence as in v1 (up to 1,000 characters, which
    only a reply stuck in a loop reaches).

    A conditional or a report reaches a statement only within its clause (a bracket or a turn such
    as ``지만``, ``but`` ends it): in ``소아인 경우 A이지만, 성인이므로 정답은 C`` and ``..., but the
    answer is C`` the clause turns away from it before the statement.
    """
    before, rest_all, rest = before[-_CLAUSE_REACH:], rest, rest[:_CLAUSE_REACH]
    turns = list(_CLAUSE_TURN.finditer(before)) if _may(_TURN_KEYS, before) else []
    near_before = before[turns[-1].end() :] if turns else before
    turn_after = _CLAUSE_TURN.search(rest) if _may(_TURN_KEYS, rest) else None
    near_rest = rest[: turn_after.start()] if turn_after else rest
    for pattern, keys in ((_CONDITIONAL, _CONDITIONAL_KEYS), (_REPORTED, _REPORTED_KEYS)):
        if any(_may(keys, t) and pattern.search(t) for t in (near_before, near_rest)):
            return "void"
    return "soft" if _may(_HEDGE_KEYS, rest_all) and HEDGE.search(rest_all) else "plain"


# Words one of which every match of a pattern above contains (lower-cased): a text holding none of
# them cannot match, so the pattern's many alternatives are tried only where one occurs. The
# reply is NFKC-normalised, so lower-casing finds every case-insensitive match's key.
_TURN_KEYS = ("(", "[", "지만", "그러나", "그런데", "반면", "므로", "때문에", "따라서", "결국",
              "but", "however", "since", "because", "so", "thus", "therefore")
_CONDITIONAL_KEYS = ("만약", "만일", "가령", "다면", "라면", "으면", "경우", "if", "unless", "suppos", "assuming",
                     "were", "had")
_REPORTED_KEYS = ("일부", "어떤", "몇몇", "다른", "과거", "예전", "옛", "기존", "외국", "라고", "라는", "다고",
                  "some", "certain", "older", "other", "many", "several", "said", "claimed", "reported",
                  "believed", "according")
_HEDGE_KEYS = ("수", "지도", "않을까", "일까", "?", "might", "could", "possibly", "perhaps")


def _may(keys: tuple[str, ...], text: str) -> bool:
    return any(map(text.lower().__contains__, keys))


_OPENERS = "([【「『<\"'“‘`"
_CLOSERS = ")]】」』>\"'”’`"


@lru_cache(maxsize=16)
def token_source(options: tuple[str, ...]) -> str:
    """The shared answer token (``tokens.token_pattern``) without its group names, to compose gates."""
    letters = "".join(re.escape(o) for o in options)
    digits = "".join(str(i) for i in range(1, min(len(options), 9) + 1))
    return (
        rf"[{re.escape(_OPENERS)}]*(?:\*\*|__)?[{re.escape(_OPENERS)}]*"
        rf"(?:[{letters}{letters.lower()}]|[{digits}])(?![A-Za-z0-9])"
        r"(?:\s*번(?:째)?)?"
        rf"[{re.escape(_CLOSERS)}]*(?:\*\*|__)?[{re.escape(_CLOSERS)}]*"
    )


@lru_cache(maxsize=64)
def gate(options: tuple[str, ...], after: str) -> re.Pattern[str]:
    """Where a token starts that ``after`` (a pattern source) follows; ``after=LABELLED`` and
    ``LABELLED_OR_HANGUL`` ask for a bracketed, bold or label-marked token (or one a syllable follows)."""
    tok = token_source(options)
    if after in (LABELLED, LABELLED_OR_HANGUL):
        o, c = re.escape(_OPENERS), re.escape(_CLOSERS)
        extra = "|[가-힣]" if after == LABELLED_OR_HANGUL else ""
        return re.compile(rf"(?=[{o}]|\*\*|__|(?:{tok})(?:(?<=[{c}*_])|[ \t]*[.):\-–—]{extra}))")
    return re.compile(rf"(?=(?:{tok})(?:{after}))", re.IGNORECASE)


LABELLED = "<labelled>"
LABELLED_OR_HANGUL = "<labelled-or-hangul>"
_LOOKAHEAD = 256  # characters a gate may look past the end of its range


def token_matches(
    text: str, options: tuple[str, ...], after: str, start: int = 0, end: int | None = None,
    also: list[int] | None = None, keys: tuple[str, ...] | None = None,
) -> list[re.Match[str]]:
    """The matches of the shared token pattern that ``finditer(text, start, end)`` gives, restricted
    to those that ``gate(options, after)`` admits, found in one scan of the text.

    The candidates a gate admits are a superset of those a rule accepts (each rule still checks
    its token with :func:`token_at`); like ``finditer``, a match never starts inside the previous
    one, so an opening bracket's token is not read again from its letter. ``also``: more positions
    to try, found by another scan; ``keys``: words one of which every ``after`` holds (lower-cased),
    so that a text holding none is not scanned.
    """
    end = len(text) if end is None else end
    pattern = token_pattern(options)
    out: list[re.Match[str]] = []
    consumed = start
    lowered = text.lower() if keys else ""
    if keys and not any(k in lowered for k in keys):
        found = []  # none of the words every tail holds: the gate would admit nothing
    else:
        found = [g.start() for g in gate(options, after).finditer(text, start, min(len(text), end + _LOOKAHEAD))]
    for p in sorted(set(found + also)) if also else found:
        if p >= end:
            break
        if p < consumed:
            continue
        m = pattern.match(text, p, end)
        if m is None:
            continue
        consumed = m.end()
        out.append(m)
    return out


def scan(pattern: re.Pattern[str], text: str, keys: tuple[str, ...]) -> list[re.Match[str]]:
    """``pattern.finditer(text)``, skipped when ``text`` holds none of ``keys`` (lower-cased): words
    one of which every match contains. A pattern of many alternatives costs about a microsecond
    a character to scan; a substring test costs almost nothing, and most replies lack the words."""
    lowered = text.lower()
    if not any(k in lowered for k in keys):
        return []
    return list(pattern.finditer(text))


# Words every match of the shared answer marker contains (정답, 해답, 답변, 답; answer; correct option).
PREFIX_MARKER_KEYS = ("답", "answer", "option", "choice")


def gated_starts(text: str, options: tuple[str, ...], after: str) -> list[int]:
    """Every position where an answer token starts that ``after`` follows (overlapping, like a search
    from each position): a superset of the tokens a rule would accept there, in one scan."""
    return [m.start() for m in gate(options, after).finditer(text)]
