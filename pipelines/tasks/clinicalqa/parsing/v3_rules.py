"""The answer forms parser v3 adds to v2; ``parsing.v3`` decides when they are consulted.

Each rule is one answer style that v2 read as "no answer" on real replies, written narrowly enough
that it cannot turn an option that is merely discussed into an answer:

- structured answers: a JSON key ``answer``/``final_answer``/``정답`` (fenced or bare, even when the
  JSON is not strictly valid) whose value is one option (``"B"``, ``"B. Metformin"``, ``["B"]``);
  a bare number is refused, since a JSON index may count from 0;
- committing sentences: ``Option B is correct``, ``I would choose / I'd go with D``, ``Therefore,
  C.``, ``E입니다.``, ``C가 정답으로 판단됩니다``, ``가장 적절한 것은 C이다``, ``C를 선택합니다``. The
  short forms (``Therefore, C.``, ``E입니다.``) count only when the option ends the sentence and the
  sentence starts with it (after a connective such as ``따라서``), so ``E. coli입니다`` or ``C입니다만
  ...`` stay what they were;
- an answer given by option text (``The answer is metformin.``, ``정답은 경구 항생제입니다.``) or by a
  bold option line under a lead-in (``정답은 다음과 같습니다.`` / ``### 정답`` then ``**C. 경구
  항생제**``), matched against the item's own options. When the option texts are known, a label's
  text must agree with them: ``B. Insulin`` for B = Metformin is no answer, another option's text
  is ambiguous.

Every rule keeps v2's bounds: a conditional or a report (``if the patient were a child``, ``일부
교재에서는``) voids the statement (``v3_scan.statement_hedge``), a hedged one (``might``, ``수도 있다``, a
question) commits to nothing, and a statement naming several options is ambiguous. The token and
hedge rules are v3's own copy of v2's (``parsing.v3_scan``), never the frozen v2 modules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Mapping

from pipelines.tasks.clinicalqa.parsing.tokens import FILLER, PREFIX_MARKER
from pipelines.tasks.clinicalqa.parsing.v3_find import (
    PREFIX_MARKER_KEYS,
    Anchor,
    may_hold,
    scan,
    token_pattern,
    tokens_followed_by,
)
from pipelines.tasks.clinicalqa.parsing.v3_scan import (
    Token,
    last_of,
    line_end,
    normalise_text,
    sentence_rest,
    statement_hedge,
    token_at,
)


@dataclass(frozen=True)
class Statement:
    """One answer statement of a v3 rule: ``prediction`` is None when it names several options."""

    position: int
    prediction: str | None


# "none of the options", "정답이 없다": the reply rejects every option, so no v3 rule may pick one.
NONE_OF_THE_OPTIONS = re.compile(
    r"\bnone\s+of\s+the\s+(?:options|choices|answers|above|listed)\b|\bno\s+(?:single\s+)?(?:correct\s+)?"
    r"(?:option|answer|choice)\s+(?:is|fits)\b|\ball\s+(?:of\s+)?the\s+options\s+are\s+(?:wrong|incorrect)\b"
    r"|(?:정답|답|맞는\s*것|적절한\s*(?:것|답|보기))\s*(?:이|은|는|가)?\s*없|해당\s*(?:하는\s*)?(?:보기|선택지|답)?\s*없"
    r"|(?:보기|선택지)\s*(?:가|는|이)?\s*모두\s*(?:틀|오답|부적절)",
    re.IGNORECASE,
)
# Words one of which every match of NONE_OF_THE_OPTIONS holds (lower-cased; ``v3_scan.scan``).
NONE_KEYS = ("none", "option", "answer", "choice", "없", "모두")
# ... of the choosing sentences and "가장 적절한 것은", of a JSON answer key, and of an answer lead-in line.
_CHOOSE_KEYS = ("choose", "go", "pick", "select", "for", "choice")
_MOST_KEYS = ("가장",)
_JSON_KEYS = ("answer", "정답")
_LEAD_IN_KEYS = ("답", "결론", "answer", "conclusion")

_CONJUNCTION = re.compile(r"\s*(?:,\s*(?:and|or)\b|,|/|&|\+|또는|혹은|아니면|이거나|거나|이나|나|와|과|및|\bor\b|\band\b)\s*",
                          re.IGNORECASE)
_LISTED_BEFORE = re.compile(r"\s*(?:,|/|&|\+|또는|혹은|이나|와|과|및|\bor\b|\band\b)\s*", re.IGNORECASE)
_NOT_BUT = re.compile(r"[ \t]*+(?:가|이|은|는)?[ \t]*+아니(?:라|고)[ \t]*,?[ \t]*")
_SENTENCE_BOUNDARY = ".!?。\n:"
# What may stand before an answer that starts a sentence: markup, a connective, "option". The old
# ``A*(C)?B*(O)?B*`` (B within A) backtracked cubically on a long blank run that ends in anything
# else (a 2 KB reply took 21 s); ``A*+(C B*+)?(O B*+)?`` is the same language, matched in linear time.
_CONNECTIVE = re.compile(
    r"[\s>*#_\-•+]*+(?:(?:so|thus|therefore|hence|overall|accordingly|consequently|in\s+conclusion|in\s+summary"
    r"|따라서|그러므로|그래서|결론적으로|결론은|결국|즉|최종적으로|종합하면)\s*+[,:]?[\s*_]*+)?"
    r"(?:(?:option|choice|보기|선택지)\s++[\s*_]*+)?",
    re.IGNORECASE,
)
_COPULA_WORDS = "입니다|이다|예요|이에요|임|이죠"
_COPULA = rf"[ \t]*+(?:{_COPULA_WORDS})"


def _plain_digit(body: str, token: Token) -> bool:
    """A bare digit (``3``, not ``3번``): a count or a step number too often to be read from a sentence."""
    raw = body[token.start : token.end]
    return "번" not in raw and any(c.isdigit() for c in raw)


def _committed(body: str, lead: int, token: Token, options: tuple[str, ...], rest_from: int) -> Statement | None:
    """The statement of ``token``: ambiguous when it is listed with another option, None when voided or hedged."""
    conj = _CONJUNCTION.match(body, token.end)
    if conj and token_at(body, conj.end(), options) is not None:
        return Statement(lead, None)
    before = body[max(0, token.start - 40) : token.start]
    for m in token_pattern(options).finditer(before):
        prior = token_at(before, m.start(), options)
        if prior is not None and _LISTED_BEFORE.fullmatch(before, prior.end):
            return Statement(lead, None)  # "B와 D를 선택합니다": several answers
    if statement_hedge(body, lead, rest_from) != "plain":
        return None  # a conditional, a report, or a hedge: no commitment
    return Statement(lead, token.value)


def _token_after_lead(body: str, pos: int, options: tuple[str, ...], texts: Mapping[str, str] | None) -> Token | None:
    """The token at ``pos``; ``C가 아니라 D`` gives D."""
    token = token_at(body, pos, options, option_texts=texts)
    if token is not None and (contrast := _NOT_BUT.match(body, token.end)):
        token = token_at(body, contrast.end(), options, option_texts=texts)
    if token is None or token.conflict is not None or _plain_digit(body, token):
        return None
    return token


# -- committing sentences --------------------------------------------------------------------

_EN_OPTION_CORRECT = re.compile(
    r"[ \t]+is[ \t]+(?:the[ \t]+)?(?:most[ \t]+)?(?:correct|right|best|appropriate)"
    r"(?:[ \t]+(?:answer|option|choice|one|response))?"
    # the old lookahead "[ \t]*(?:\*\*)?[ \t]*(?:...|,?\s+because)" backtracked cubically on a long blank
    # run (2,000 blanks: 196 s); possessive runs, and "\s+" as "the character before is a blank", say the same
    r"(?=[ \t]*+(?:\*\*)?[ \t]*+(?:[.!;)\n]|$|,\s++(?:because|since|as|here)\b|\s*+(?<=\s)(?:because|since|as|here)\b))",
    re.IGNORECASE,
)
_EN_CHOOSE = re.compile(
    r"\b(?:I[ \t]+would|I'd|I[ \t]+will|I'll|I|I[ \t]+am[ \t]+going[ \t]+to|I'm[ \t]+going[ \t]+to)[ \t]+"
    r"(?:choose|go[ \t]+with|pick|select|opt[ \t]+for)[ \t]+|\bI'm[ \t]+going[ \t]+with[ \t]+|\bmy[ \t]+(?:final[ \t]+)?"
    r"(?:choice|pick|selection)[ \t]+is[ \t]+",
    re.IGNORECASE,
)
_EN_CHOOSE_OBJECT = re.compile(r"(?:(?:option|choice|answer)[ \t]+)?(?:\*\*)?", re.IGNORECASE)
_EN_CHOOSE_TAIL = re.compile(r"(?:\*\*)?(?=[ \t]*(?:[.!,;:()\n—–-]|$|[ \t]+(?:because|since|as|over|given)\b))",
                             re.IGNORECASE)
_KO_MARKED = re.compile(
    r"[ \t]*(?:가|이|은|는)[ \t]*(?:가장[ \t]*(?:적절|적합|옳|알맞|타당|올바)[가-힣]*[ \t]*(?:정답|답|선택|보기|것)"
    rf"(?:{_COPULA_WORDS}|(?![가-힣]))"
    r"|(?:최종[ \t]*)?(?:정답|답)(?:으로|이라고|인[ \t]*것[ \t]*같)[ \t]*"
    r"(?:보입니다|보인다|판단됩니다|판단된다|판단합니다|생각합니다|생각된다|생각됩니다|여겨집니다|사료됩니다|사료된다|습니다|다))"
)
_KO_CHOOSE = re.compile(
    r"[ \t]*(?:을|를)[ \t]*(?:최종[ \t]*)?(?:정답으로[ \t]*)?(?:선택|택|고르|고릅|골라|골랐|고름)"
    r"(?:합니다|하겠습니다|한다|하겠다|함|했습니다|하였습니다|했다|하였다|할게요|하겠어요|해요|니다|겠습니다|다|음|했음"
    r"|하는[ \t]*것이[ \t]*(?:적절|타당|옳|맞|바람직)[가-힣]*)?(?![가-힣])"
)
_KO_MOST = re.compile(
    r"가장[ \t]*(?:적절|적합|옳|알맞|타당|올바르|올바|바람직|우선적|먼저|가능성이?[ \t]*높|유력)[가-힣]*[ \t]+"
    r"(?:[가-힣]+[ \t]+){0,3}?(?:것|보기|선택지?|답|정답|치료|검사|진단|처치|조치|약물?|방법|원인|답안|선택)(?:은|는|으로는)[ \t]*"
    r"(?:보기[ \t]*)?(?:\*\*)?"
)
# possessive blank runs: what follows each cannot start with a blank (quadratic on a long blank run before)
_COPULA_END = re.compile(rf"(?:\*\*)?(?:{_COPULA})?(?=[ \t]*+(?:\*\*)?[ \t]*+(?:[.!。](?:\s|$)|\n|$))")


_SENTENCE_TAILS = (_EN_OPTION_CORRECT, _KO_MARKED, _KO_CHOOSE, _COPULA_END)
_TAIL_STARTS = " \t가이은는을를*입예임"  # what a tail that is not empty starts with
# Where each can start: blanks before "is ... correct", a particle and its 정답, 을/를 and 선택; a copula before a sentence end.
_SENTENCE_ANCHORS = (
    Anchor(re.compile(r"i(?=s[ \t]+(?:the[ \t]+)?(?:most[ \t]+)?(?:correct|right|best|appropriate))", re.IGNORECASE), r" \t"),
    Anchor(re.compile(r"[가이은는](?=[ \t]*(?:가장|최종|정답|답))"), r" \t"),
    Anchor(re.compile(r"[을를](?=[ \t]*(?:최종[ \t]*)?(?:정답으로[ \t]*)?(?:선택|택|고르|고릅|골라|골랐|고름))"), r" \t"),
    Anchor(re.compile(r"[.!。\n]"), r" \t*입니다이예요에임죠", at_end=True),
)
Candidate = tuple[int, Callable[[], "Statement | None"]]  # a statement's position, and how to read it


def sentence_candidates(body: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> list[Candidate]:
    """Committing sentences in English and Korean (see the module docstring), as (position, reader)
    pairs in the order v3 read them: a reader gives the statement or None. ``parsing.v3`` reads
    them from the last one back, as far as the last statement matters."""
    out: list[Candidate] = []
    pattern = token_pattern(options)
    for start in tokens_followed_by(body, options, _SENTENCE_TAILS, _SENTENCE_ANCHORS):  # each branch needs one
        if start > 0 and body[start - 1].isalnum() and not "가" <= body[start - 1] <= "힣":
            continue
        end = pattern.match(body, start).end()  # where token_at's token ends, if it reads one here
        if body[end : end + 1] not in _TAIL_STARTS and (start == 0 or body[start - 1] in _SENTENCE_BOUNDARY or not body[
            last_of(body, _SENTENCE_BOUNDARY, start) + 1 : start].strip(" \t*_#>-•+")):
            continue  # no tail but an empty one, which counts only after a connective: "A. A. A." costs no regex
        preceding = body[max(0, start - 20) : start]
        if (tail := _EN_OPTION_CORRECT.match(body, end)) and re.search(r"(?:option|choice)[ \t]*$", preceding, re.I):
            lead = start - len(re.search(r"(?:option|choice)[ \t]*$", preceding, re.I).group())
        elif (tail := _KO_MARKED.match(body, end) or _KO_CHOOSE.match(body, end)) is not None:
            lead = start
        elif _CONNECTIVE.fullmatch(body, sentence := last_of(body, _SENTENCE_BOUNDARY, start) + 1, start) is not None and (
            (tail := _COPULA_END.match(body, end)) is not None and (tail.group() or _connective_before(body, sentence, start))
            or (tail := _EN_OPTION_CORRECT.match(body, end)) is not None
        ):
            lead = start  # "E입니다.", "Therefore, C.", "C is correct."
        else:
            continue
        out.append((lead, partial(_sentence_one, body, start, lead, tail.end(), options, texts)))
    for finder, keys in ((_EN_CHOOSE, _CHOOSE_KEYS), (_KO_MOST, _MOST_KEYS)):
        out += [(m.start(), partial(_chosen_one, body, m, finder is _EN_CHOOSE, options, texts)) for m in scan(finder, body, keys)]
    return out


def _sentence_one(body: str, start: int, lead: int, tail_end: int, options: tuple[str, ...],
                  texts: Mapping[str, str] | None) -> Statement | None:
    token = token_at(body, start, options, option_texts=texts)
    if token is None or token.conflict is not None or _plain_digit(body, token):
        return None
    return _committed(body, lead, token, options, tail_end)


def _chosen_one(body: str, m: re.Match[str], english: bool, options: tuple[str, ...],
                texts: Mapping[str, str] | None) -> Statement | None:
    pos = _EN_CHOOSE_OBJECT.match(body, m.end()).end() if english else m.end()
    token = _token_after_lead(body, pos, options, texts)
    if token is None:
        return None
    conj = _CONJUNCTION.match(body, token.end)
    if conj and token_at(body, conj.end(), options) is not None:
        return Statement(m.start(), None)  # "I would choose C or D", "가장 적절한 것은 C 또는 D"
    tail = (_EN_CHOOSE_TAIL if english else _COPULA_END).match(body, token.end)
    if tail is None:
        return None
    return _committed(body, m.start(), token, options, tail.end())


def _connective_before(body: str, start: int, token_start: int) -> bool:
    """``Therefore, C.``: a bare option closing a sentence (that starts at ``start``, after a connective at
    most) counts only after a connective (or ``Option``)."""
    return bool(body[start:token_start].strip(" \t*_#>-•+"))


# -- structured answers ----------------------------------------------------------------------

_JSON_KEY = re.compile(
    r"""(?P<q>["'])[ \t]*(?:final[_ ]?answer|answer|최종[ \t]*정답|정답)[ \t]*(?P=q)[ \t]*:[ \t]*""", re.IGNORECASE
)
_JSON_STRING = re.compile(r"""(?P<q>["'])(?P<v>[^"'\n]*)(?P=q)""")
_JSON_LIST = re.compile(r"""\[(?P<v>[^\]\n]*)\]""")


def _value_statement(
    value: str, position: int, options: tuple[str, ...], texts: Mapping[str, str] | None
) -> Statement | None:
    """The option a structured answer's value names: a label (with its own text), or an option text."""
    value = value.strip()
    token = token_at(value, 0, options, plain_lower=True, after_marker=True, option_texts=texts)
    if token is not None and not _plain_digit(value, token):
        if token.conflict is not None:
            return Statement(position, None)
        rest = value[token.end :]
        if not rest.strip(" .)") or token.text_match or (texts is None and re.match(r"[ \t]*[.):]", rest)):
            return Statement(position, token.value)
        return None
    letter = option_by_text(value, texts)
    return Statement(position, letter) if letter else None


def json_statements(body: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> list[Statement]:
    """``{"answer": "B"}``, ``'final_answer': 'B. Metformin'``, ``"정답": ["C"]``, fenced or bare."""
    out = []
    for key in scan(_JSON_KEY, body, _JSON_KEYS):
        if (string := _JSON_STRING.match(body, key.end())) is not None:
            values = [string.group("v")]
        elif (listed := _JSON_LIST.match(body, key.end())) is not None:
            values = [v.group("v") for v in _JSON_STRING.finditer(listed.group("v"))]
        else:
            continue  # null, a number (an index may count from 0), or an object
        found = [s for v in values if (s := _value_statement(v, key.start(), options, texts)) is not None]
        letters = {s.prediction for s in found}
        if len(found) == 1 or (found and len(letters) == 1 and None not in letters):
            out.append(found[0])
        elif found:
            out.append(Statement(key.start(), None))
    return out


# -- answers by option text, and option lines under a lead-in ---------------------------------

_TEXT_SUFFIX = r"(?:입니다|이다|이에요|예요|임|이며|이고|이라|으로|로|이|가|은|는|을|를|와|과)?"
_TEXT_END = re.compile(r"[ \t]*(?:\*\*)?[ \t]*(?:$|\n|[.!。,;:)(]|[ \t]+(?:because|since|as|which|given)\b)", re.IGNORECASE)
# A line that is only an answer lead-in: "정답은 다음과 같습니다.", "The answer is:", "### 정답", "**Final answer**".
# Possessive runs: each is followed by something that cannot start with what it takes, or by a run
# that takes the same characters, so the language is the old one; the old pattern backtracked
# cubically on a line like "정답" + 2,000 blanks + "x" (18 s).
_LEAD_IN_LINE = re.compile(
    r"[ \t#>*_]*+(?:(?:the|my)[ \t]++)?(?:(?:final|correct|best)[ \t]++)?(?:최종[ \t]*+)?"
    r"(?:정답|답|답변|결론|answer|conclusion)(?:은|는|이|으로는)?[ \t]*+(?:is[ \t]*+|would[ \t]++be[ \t]*+)?"
    r"(?:(?:다음과|아래와)[ \t]*+같(?:습니다|다|음)|as[ \t]++follows)?[ \t.:：]*+(?:\*\*|__)?[ \t]*+",
    re.IGNORECASE,
)
_LINE_MARKUP = re.compile(r"[ \t]*(?:[-*•+>][ \t]+)?")
_BOLD_LINE = re.compile(r"(?:\*\*|__)(?P<inner>[^*_\n]+?)(?:\*\*|__)[ \t]*[.!。]?[ \t]*$")


@lru_cache(maxsize=4096)
def _text_pattern(text: str) -> re.Pattern[str]:
    """An option's (normalised) text as written in a reply: any case, any punctuation between its words."""
    words = [re.escape(w) for w in text.split()]
    return re.compile(r"[ \t*_\"'“‘]*" + r"[\W_]+".join(words) + r"[\"'”’*_]*" + _TEXT_SUFFIX, re.IGNORECASE)


@lru_cache(maxsize=4096)
def _first_word(text: str) -> re.Pattern[str]:
    """The first word of an option's (normalised) text, as ``_text_pattern`` matches it: in any case."""
    return re.compile(re.escape(text.split()[0]), re.IGNORECASE)


def option_by_text(segment: str, texts: Mapping[str, str] | None, pos: int = 0, endpos: int | None = None) -> str | None:
    """The one option whose text ``segment`` starts with (at ``pos``; ``segment[:endpos]`` read as the
    whole), up to a particle or a sentence end; else None.

    The longest text wins (``수술 후 항생제`` over ``수술``); two options with the same text give None.
    """
    if not texts:
        return None
    endpos = len(segment) if endpos is None else endpos
    hits: list[tuple[int, str]] = []
    for letter, text in texts.items():
        if not text:
            continue
        m = _text_pattern(text).match(segment, pos, endpos)
        if m and _TEXT_END.match(segment, m.end(), endpos):
            hits.append((len(text), letter))
    if not hits:
        return None
    best = max(n for n, _ in hits)
    letters = {letter for n, letter in hits if n == best}
    return letters.pop() if len(letters) == 1 else None


def option_text_statements(body: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> list[Statement]:
    """``The answer is metformin.``, ``정답은 경구 항생제입니다.``: an answer marker, then an option's text."""
    if not texts:
        return []
    out = []
    markers = scan(PREFIX_MARKER, body, PREFIX_MARKER_KEYS)
    if len(markers) > 64 and not any(t and _first_word(t).search(body) for t in texts.values()):
        return out  # a reply of many markers and no option's first word: none is followed by an option's text
    for marker in markers:
        filler = FILLER.match(body, marker.end())
        if "\n" in filler.group():
            continue
        letter = option_by_text(body, texts, filler.end(), line_end(body, filler.end()))
        if letter is None:
            continue
        others = [k for k, t in texts.items() if k != letter and t and t in normalise_text(sentence_rest(body, filler.end()))]
        if others:
            continue  # "metformin, not insulin" or "metformin or insulin": not one answer
        if statement_hedge(body, marker.start(), filler.end()) == "plain":
            out.append(Statement(marker.start(), letter))
    return out


def lead_in_statements(body: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> list[Statement]:
    """The first line after ``정답은 다음과 같습니다.`` or ``### 정답``: a bold option line or an option's text."""
    out = []
    if not may_hold(body, _LEAD_IN_KEYS):
        return out
    lines = body.split("\n")
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    for i, line in enumerate(lines):
        if not _LEAD_IN_LINE.fullmatch(line):
            continue
        nxt = next((j for j in range(i + 1, len(lines)) if lines[j].strip()), None)
        if nxt is None:
            continue
        content = lines[nxt][_LINE_MARKUP.match(lines[nxt]).end() :].rstrip()
        bold = _BOLD_LINE.fullmatch(content)
        inner = bold.group("inner").strip() if bold else content
        statement = _option_line(inner, offsets[i], options, texts, bold is not None)
        if statement is not None:
            out.append(statement)
    return out


def _option_line(
    inner: str, position: int, options: tuple[str, ...], texts: Mapping[str, str] | None, bold: bool
) -> Statement | None:
    token = token_at(inner, 0, options, after_marker=True, option_texts=texts)
    if token is not None and not _plain_digit(inner, token):
        if token.conflict is not None:
            return Statement(position, None)
        rest = inner[token.end :]
        own = texts.get(token.value) if texts else None
        # a plain line must be exactly the label and its text; a bold line may add to the text
        exact = own is not None and normalise_text(rest) == own
        agrees = exact or (bold and (token.text_match or (texts is None and re.match(r"[ \t]*[.):\-–—]", rest))))
        if not rest.strip(" .") or agrees:
            return Statement(position, token.value)
        return None
    letter = option_by_text(inner, texts)
    return Statement(position, letter) if letter else None
