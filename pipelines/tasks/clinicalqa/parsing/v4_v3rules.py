"""The answer forms v3 added to v2, copied from ``parsing.v3_rules`` for parser v4 and made near linear.

v4 reads what v3 read, the same way, without calling v3 (which is being rewritten) or sharing its
code: structured answers (``{"answer": "B"}``), committing sentences (``Option B is correct``,
``I would choose D``, ``Therefore, C.``, ``E입니다.``, ``가장 적절한 것은 C이다``, ``C를 선택합니다``),
an answer by option text after a marker, and a bold option line under a lead-in, with v3's bounds
(conditionals, reports and hedges void a statement; several options are ambiguous; "none of the
options" picks none). The cost changes only: the committing-sentence rule looks at the letters a
one-scan gate admits (``v4_tokens.token_matches``), a sentence's start is found by bisection over
its boundaries, and an option's text is compared over a bounded window after its marker. See
docs/adding-a-task.md (ClinicalQA answer parsers).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Callable, Mapping

from pipelines.tasks.clinicalqa.parsing.tokens import FILLER, PREFIX_MARKER, token_pattern
from pipelines.tasks.clinicalqa.parsing.v4_tokens import (
    Token,
    hedge_of,
    normalise_text,
    sentence_before,
    sentence_rest,
    token_at,
    token_matches,
    PREFIX_MARKER_KEYS,
    scan,
)


Candidate = tuple[int, "Callable[[], Statement | None]"]  # a statement's position, and how to read it


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

_CONJUNCTION = re.compile(r"\s*(?:,\s*(?:and|or)\b|,|/|&|\+|또는|혹은|아니면|이거나|거나|이나|나|와|과|및|\bor\b|\band\b)\s*",
                          re.IGNORECASE)
_LISTED_BEFORE = re.compile(r"\s*(?:,|/|&|\+|또는|혹은|이나|와|과|및|\bor\b|\band\b)\s*", re.IGNORECASE)
_NOT_BUT = re.compile(r"[ \t]*(?:가|이|은|는)?[ \t]*아니(?:라|고)[ \t]*,?[ \t]*")
_SENTENCE_BOUNDARY = ".!?。\n:"
_CONNECTIVE = re.compile(
    r"[\s>*#_\-•+]*(?:(?:so|thus|therefore|hence|overall|accordingly|consequently|in\s+conclusion|in\s+summary"
    r"|따라서|그러므로|그래서|결론적으로|결론은|결국|즉|최종적으로|종합하면)\s*[,:]?)?[\s*_]*"
    r"(?:(?:option|choice|보기|선택지)\s+)?[\s*_]*",
    re.IGNORECASE,
)
_COPULA_WORDS = "입니다|이다|예요|이에요|임|이죠"
_COPULA = rf"[ \t]*(?:{_COPULA_WORDS})"


def _plain_digit(body: str, token: Token) -> bool:
    """A bare digit (``3``, not ``3번``): a count or a step number too often to be read from a sentence."""
    raw = body[token.start : token.end]
    return "번" not in raw and any(c.isdigit() for c in raw)


class Boundaries:
    """The sentence boundaries of a text (``.!?。``, a line break, a colon), found once."""

    def __init__(self, body: str) -> None:
        self._body = body
        self._at: list[int] | None = None  # found at the first question: most replies never ask

    def sentence_start(self, pos: int) -> int:
        """Just after the last boundary before ``pos`` (0 when there is none)."""
        if self._at is None:
            self._at = [m.start() for m in re.finditer(f"[{re.escape(_SENTENCE_BOUNDARY)}]", self._body)]
        i = bisect_left(self._at, pos)
        return self._at[i - 1] + 1 if i else 0


def _starts_sentence(body: str, pos: int, bounds: Boundaries) -> bool:
    """Does a sentence (or a line, or what follows a colon) start at ``pos``, after a connective at most?"""
    start = bounds.sentence_start(pos)
    return _CONNECTIVE.fullmatch(body, start, pos) is not None


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
    if hedge_of(sentence_before(body, lead), sentence_rest(body, rest_from)) != "plain":
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
    r"(?=[ \t]*(?:\*\*)?[ \t]*(?:[.!;)\n]|$|,?\s+(?:because|since|as|here)\b))",
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
_COPULA_END = re.compile(rf"(?:\*\*)?(?:{_COPULA})?(?=[ \t]*(?:\*\*)?[ \t]*(?:[.!。](?:\s|$)|\n|$))")

# The tokens a committing sentence may end on: a tail other than a bare sentence end...
_CHOOSE_KEYS = ("choose", "go", "pick", "select", "opt", "going", "choice", "selection")
_SENTENCE_GATE = "|".join(
    [p.pattern for p in (_EN_OPTION_CORRECT, _KO_MARKED, _KO_CHOOSE)]
    + [rf"(?:\*\*(?:{_COPULA})?|{_COPULA})(?=[ \t]*(?:\*\*)?[ \t]*(?:[.!。](?:\s|$)|\n|$))"]
)
_SENTENCE_KEYS = ("correct", "right", "best", "appropriate", "가장", "답", "선택", "택", "고르", "고릅", "골라", "골랐",
                  "고름", "입니다", "이다", "예요", "이에요", "임", "이죠", "**")  # one is in every such tail
# ...and those after a connective or an option word ("Therefore, C.", "Option C."), the only ones a
# bare sentence end completes: found by the words, so "A. A. A." costs no check per letter.
_AFTER_CONNECTIVE = re.compile(
    r"(?:so|thus|therefore|hence|overall|accordingly|consequently|conclusion|summary|따라서|그러므로|그래서|결론적으로"
    r"|결론은|결국|즉|최종적으로|종합하면|option|choice|보기|선택지|[^\S \t\n])[\s,:>#\-•+]*",
    re.IGNORECASE,
)
_BOLD_RUN = re.compile(r"[*_ \t]*")


def sentence_candidates(body: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> list[Candidate]:
    """Committing sentences in English and Korean (see the module docstring), as (position, reader)
    pairs in v3's order: a reader gives the statement, or None. Finding them is one scan; reading
    them is left to the caller, which reads from the last one back."""
    out: list[Candidate] = []
    bounds = Boundaries(body)
    after_words = [m.end() for m in _AFTER_CONNECTIVE.finditer(body)]
    after_words += [_BOLD_RUN.match(body, p).end() for p in after_words]
    for m in token_matches(body, options, _SENTENCE_GATE, also=after_words, keys=_SENTENCE_KEYS):
        start, end = m.start(), m.end()  # a token found here spans exactly the match
        if start > 0 and body[start - 1].isalnum() and not "가" <= body[start - 1] <= "힣":
            continue
        # which tail follows is decided before the token is read, so a letter that no rule takes
        # ("A. A. A.") costs no token check
        preceding = body[max(0, start - 20) : start]
        if (tail := _EN_OPTION_CORRECT.match(body, end)) and re.search(r"(?:option|choice)[ \t]*$", preceding, re.I):
            lead = start - len(re.search(r"(?:option|choice)[ \t]*$", preceding, re.I).group())
        elif (tail := _KO_MARKED.match(body, end) or _KO_CHOOSE.match(body, end)) is not None:
            lead = start
        elif _starts_sentence(body, start, bounds) and (
            (tail := _COPULA_END.match(body, end)) is not None and (tail.group() or _connective_before(body, start, bounds))
            or (tail := _EN_OPTION_CORRECT.match(body, end)) is not None
        ):
            lead = start  # "E입니다.", "Therefore, C.", "C is correct."
        else:
            continue
        out.append((lead, partial(_sentence_one, body, start, lead, tail.end(), options, texts)))
    for finder in (_EN_CHOOSE, _KO_MOST):
        for m in scan(finder, body, _CHOOSE_KEYS if finder is _EN_CHOOSE else ("가장",)):
            out.append((m.start(), partial(_chosen_one, body, m, finder is _EN_CHOOSE, options, texts)))
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


def _connective_before(body: str, token_start: int, bounds: Boundaries) -> bool:
    """``Therefore, C.``: a bare option closing a sentence counts only after a connective (or ``Option``)."""
    start = bounds.sentence_start(token_start)
    lead = body[start:token_start].strip(" \t*_#>-•+")
    return bool(lead) and _CONNECTIVE.fullmatch(body, start, token_start) is not None


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
    for key in scan(_JSON_KEY, body, ("answer", "정답")):
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

_TEXT_WINDOW = 256  # characters after a marker that an option's text is looked for in, beyond its own length
_TEXT_SUFFIX = r"(?:입니다|이다|이에요|예요|임|이며|이고|이라|으로|로|이|가|은|는|을|를|와|과)?"
_TEXT_END = re.compile(r"[ \t]*(?:\*\*)?[ \t]*(?:$|\n|[.!。,;:)(]|[ \t]+(?:because|since|as|which|given)\b)", re.IGNORECASE)
# A line that is only an answer lead-in: "정답은 다음과 같습니다.", "The answer is:", "### 정답", "**Final answer**".
_LEAD_IN_LINE = re.compile(
    r"[ \t#>*_]*(?:(?:the|my)[ \t]+)?(?:(?:final|correct|best)[ \t]+)?(?:최종[ \t]*)?"
    r"(?:정답|답|답변|결론|answer|conclusion)(?:은|는|이|으로는)?[ \t]*(?:is[ \t]*|would[ \t]+be[ \t]*)?"
    r"(?:(?:다음과|아래와)[ \t]*같(?:습니다|다|음)|as[ \t]+follows)?[ \t.:：]*(?:\*\*|__)?[ \t]*",
    re.IGNORECASE,
)
_LINE_MARKUP = re.compile(r"[ \t]*(?:[-*•+>][ \t]+)?")
_BOLD_LINE = re.compile(r"(?:\*\*|__)(?P<inner>[^*_\n]+?)(?:\*\*|__)[ \t]*[.!。]?[ \t]*$")


@lru_cache(maxsize=4096)
def _text_pattern(text: str) -> re.Pattern[str]:
    """An option's (normalised) text as written in a reply: its words with any punctuation between."""
    words = [re.escape(w) for w in text.split()]
    return re.compile(r"[ \t*_\"'“‘]*" + r"[\W_]+".join(words) + r"[\"'”’*_]*" + _TEXT_SUFFIX, re.IGNORECASE)


_first_word = lru_cache(maxsize=4096)(lambda text: re.compile(re.escape(text.split()[0]), re.I))  # as _text_pattern reads it


def option_by_text(segment: str, texts: Mapping[str, str] | None) -> str | None:
    """The one option whose text ``segment`` starts with, up to a particle or a sentence end; else None.

    The longest text wins (``수술 후 항생제`` over ``수술``); two options with the same text give None.
    """
    if not texts:
        return None
    hits: list[tuple[int, str]] = []
    for letter, text in texts.items():
        if not text:
            continue
        m = _text_pattern(text).match(segment)
        if m and _TEXT_END.match(segment, m.end()):
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
        window = filler.end() + _TEXT_WINDOW + 4 * max(len(t) for t in texts.values())
        line_end = body.find("\n", filler.end(), window)
        if line_end >= 0 or window >= len(body):
            segment = body[filler.end() : line_end if line_end >= 0 else len(body)]
        else:  # cut at the window: a sentinel keeps the cut from reading as the end of the reply
            segment = body[filler.end() : window] + "\x00"
        letter = option_by_text(segment, texts)
        if letter is None:
            continue
        others = [k for k, t in texts.items() if k != letter and t and t in normalise_text(sentence_rest(body, filler.end()))]
        if others:
            continue  # "metformin, not insulin" or "metformin or insulin": not one answer
        if hedge_of(sentence_before(body, marker.start()), sentence_rest(body, filler.end())) == "plain":
            out.append(Statement(marker.start(), letter))
    return out


def lead_in_statements(body: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> list[Statement]:
    """The first line after ``정답은 다음과 같습니다.`` or ``### 정답``: a bold option line or an option's text."""
    out = []
    if not any(k in body.lower() for k in ("답", "결론", "answer", "conclusion")):
        return out  # every lead-in line holds one of these words
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
