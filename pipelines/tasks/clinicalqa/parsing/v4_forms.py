"""The committing styles parser v4 reads beyond v3: one rule per style, each as narrow as its evidence.

Held-out replies showed v3 reading no answer in these styles (docs/adding-a-task.md, ClinicalQA
answer parsers); ``parsing.v4`` consults these rules only where v3's reading found no answer, so
they can never displace a letter v3 read:

- answer markers in Chinese and Japanese: ``答案是 B``, ``正确答案：C``, ``最佳答案是D``, ``故选C``,
  ``正解は C です``, ``答え：B``, ``解答は【D】``, and the letter first: ``C是正确答案``, ``Cが正解です``;
- sentences asserting one option to be the answer, the most appropriate or the most likely, beyond
  v3's templates: ``The most likely diagnosis is B.``, ``The best next step here is (D).``, ``B is
  the most likely diagnosis.``, ``C가 가장 적절합니다.``, ``C 보기가 정답입니다``, ``最可能的诊断是B``,
  ``最も適切なのはCです``, and an option named by its text with its letter in brackets (``The most
  appropriate treatment is oral antibiotics (C).``, ``가장 적절한 치료는 경구 항생제(C)입니다``);
- an answer label under a heading word or in brackets: ``### 결론: C``, ``## Final choice`` then
  ``C. Oral antibiotics``, ``【정답】 C``, ``[Answer] D``, ``「正解」B``;
- a reply whose last line is only a bracketed or bold label (``【B】``, ``「C」``, ``[D]``, ``(E)``,
  ``**B**``) and no other line is.

Every rule keeps v3's bounds: a hedge (``might``, ``可能``, ``かもしれない``, a question mark), a
conditional (``if``, ``如果``, ``もし``, ``만약``) or a report voids the statement, a statement naming
two options is ambiguous, and a letter is never read out of a word (``CT``, ``E. coli``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from pipelines.tasks.clinicalqa.parsing.tokens import HEDGE, PREFIX_MARKER
from pipelines.tasks.clinicalqa.parsing.v4_tokens import (
    PREFIX_MARKER_KEYS,
    hedge_of,
    scan,
    sentence_before,
    sentence_rest,
    token_at,
    token_matches,
)
from pipelines.tasks.clinicalqa.parsing.v4_v3rules import option_by_text


@dataclass(frozen=True)
class Found:
    """One statement of a v4 rule: ``letter`` is None when it names several options."""

    position: int
    letter: str | None


_OPEN = "([【「『〔《〈"
_CLOSE = ")]】」』〕》〉"
_CJK_HEDGE = re.compile(
    r"(?<!最)(?<!最有)可能(?!性最)|也许|也許|或许|或許|大概|吗|嗎|[?？]|かもしれ|だろうか|でしょうか|不确定|不確定|迷って|迷う"
)
_CJK_CONDITIONAL = re.compile(r"如果|假如|若是|要是|倘若|もし|場合は|場合、|ならば|だったら|有人认为|有人認為|一部の教科書")
_CJK_END = re.compile(r"[。！？!?\n]")
_CJK_REACH = 120  # characters of a CJK sentence looked at on either side of a statement


def _letter_token(body: str, pos: int, options: tuple[str, ...]) -> tuple[str, int, bool] | None:
    """A letter at ``pos`` in CJK text: ``B``, ``【B】``, ``(b)``, ``**B**``: (letter, end, bracketed).

    CJK script may follow the letter directly (``Cです``, ``B选项``), where the shared token refuses
    it; a Latin letter or a digit may not (``CT``, ``B12``), nor an abbreviation's lower-case word.
    """
    m = _CJK_TOKEN.match(body, pos)
    if m is None:
        return None
    raw = m.group("v")
    bracketed = bool(m.group("o") or m.group("c"))
    if raw.upper() not in options or (raw.islower() and not bracketed):
        return None
    if re.match(r"\.[ \t]*[a-z]", body[m.end() : m.end() + 4]):
        return None  # "E. coli"
    return raw.upper(), m.end(), bracketed


_CJK_TOKEN = re.compile(
    rf"(?P<o>[{re.escape(_OPEN)}]|\*\*)?[ \t]*(?P<v>[A-Za-z])[ \t]*(?P<c>[{re.escape(_CLOSE)}]|\*\*)?(?![A-Za-z0-9])"
)
_CJK_LIST = re.compile(r"[ \t]*(?:或者|或是|或|和|与|與|及|、|/|,|，|または|か|と|および|や|\bor\b|\band\b)[ \t]*", re.IGNORECASE)
_CJK_NEGATED = re.compile(r"[ \t]*(?:ではな|じゃな|は(?:誤|不正解|間違|正しくな)|是错|是錯|不正确|不正確|不对|不對|错误|錯誤)")


def _cjk_statement(body: str, lead: int, pos: int, options: tuple[str, ...]) -> Found | None:
    """The statement of the letter at ``pos`` after a CJK marker starting at ``lead``."""
    token = _letter_token(body, pos, options)
    if token is None:
        return None
    letter, end, _ = token
    if _CJK_NEGATED.match(body, end):
        return None
    if (listed := _CJK_LIST.match(body, end)) and _letter_token(body, listed.end(), options):
        return Found(lead, None)
    start = max(body.rfind(c, max(0, lead - _CJK_REACH), lead) for c in "。！？!?\n") + 1
    stop = _CJK_END.search(body, end, end + _CJK_REACH)
    sentence = body[max(start, lead - _CJK_REACH) : stop.start() if stop else end + _CJK_REACH]
    if _CJK_HEDGE.search(sentence) or _CJK_CONDITIONAL.search(sentence):
        return None
    return Found(lead, letter)


_CJK_MARKER = re.compile(
    r"(?:(?:最终|最終|正确|正確|最佳|标准|標準|参考|參考)?答案|(?:正确|正確|最佳)(?:选项|選項))[ \t]*(?:应该|應該|应当|應當|应|應)?[ \t]*"
    r"(?:不是[^。\n，,]{0,12}?[，,]?[ \t]*而是|是|为|為|选|選|:)[ \t]*(?:选项|選項)?[ \t]*"
    r"|(?:故|所以|因此|因而|综上所述|綜上所述|综上|綜上|最终|最終)[ \t]*[，,、]?[ \t]*(?:本题|本題)?[ \t]*(?:应|應)?(?:选择|選擇|选|選)[ \t]*"
    r"|(?:正解|答え|解答|最終(?:的な)?(?:回答|答え)|回答)[ \t]*(?:は|:)[ \t]*(?:選択肢)?[ \t]*"
    r"|最(?:可能|有可能|合适|合適|恰当|恰當|适合|適合|佳)的?[\u4e00-\u9fff]{0,8}?(?:是|为|為)[ \t]*(?:选项|選項)?[ \t]*"
    r"|最も(?:適切|妥当|適当|可能性が高い|考えられる|ふさわしい)[^\n。、]{0,12}?(?:は|:)[ \t]*(?:選択肢)?[ \t]*"
)
_CJK_POSTFIX = re.compile(
    r"[ \t]*(?:(?:是|为|為)[ \t]*(?:正确答案|正確答案|正确的|正確的|最佳答案|最佳选项|最佳選項|答案|最合适的|最合適的)"
    r"|(?:が|は)[ \t]*(?:正解|最も適切|答え))"
)


def cjk_statements(body: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> list[Found]:
    """``答案是B``, ``故选C``, ``正解はCです``, ``最可能的诊断是B``, ``C是正确答案``, ``Cが正解です``."""
    out = []
    for marker in scan(_CJK_MARKER, body, ("答案", "选", "選", "正解", "答え", "解答", "回答", "最")):
        found = _cjk_statement(body, marker.start(), marker.end(), options)
        if found is None and (letter := text_at(body, marker.end(), texts)):
            found = Found(marker.start(), letter)
        if found is not None:
            out.append(found)
    for tail in scan(_CJK_POSTFIX, body, ("正确", "正確", "最佳", "答案", "最合", "正解", "最も", "答え")):
        for back in (1, 2, 3):  # "C是", "【C】是", "**C**は"
            pos = tail.start() - back
            token = _letter_token(body, pos, options) if pos >= 0 else None
            if token is not None and token[1] == tail.start() and (pos == 0 or not body[pos - 1].isascii() or not body[pos - 1].isalnum()):
                found = _cjk_statement(body, pos, pos, options)
                if found is not None:
                    out.append(found)
                break
    return out


# -- English and Korean sentences that assert one option ----------------------------------------

_EN_LEAD = re.compile(
    r"\b(?:the|my)[ \t]+(?:single[ \t]+)?(?:most[ \t]+(?:likely|appropriate|probable|suitable|accurate|reasonable|consistent|fitting)"
    r"|best|correct|right|final)(?:[ \t]+[A-Za-z][A-Za-z'\-]*){0,6}?[ \t]+(?:is|would[ \t]+be|remains)[ \t]+"
    r"(?:therefore[ \t]+|thus[ \t]+|clearly[ \t]+)?(?:(?:option|choice|answer)[ \t]+)?(?:\*\*)?",
    re.IGNORECASE,
)
_KO_LEAD = re.compile(
    r"가장[ \t]*(?:적절|적합|옳|알맞|타당|올바르|올바|바람직|우선적|먼저|가능성이?[ \t]*높|유력)[가-힣]*[ \t]+"
    r"(?:[가-힣]+[ \t]+){0,3}?(?:것|보기|선택지?|답|정답|치료|검사|진단|처치|조치|약물?|방법|원인|답안|선택)(?:은|는|으로는)[ \t]*(?:\*\*)?"
)
_EN_END = re.compile(r"(?:\*\*)?(?=[ \t]*(?:[.!;,:)\n]|$|[ \t]*[(\[]|[ \t]+(?:because|since|as|given|which|due)\b|[ \t]+[—–-]))",
                     re.IGNORECASE)
_KO_END = re.compile(r"(?:\*\*)?[ \t]*(?:입니다|이다|예요|이에요|임|이죠|으로[ \t]*(?:판단|생각)[가-힣]*)?(?=[ \t]*(?:[.!。,]|\n|$))")
_NAMED_IN_BRACKETS = re.compile(
    r"(?P<words>[^.!?。\n()（）]{1,80}?)[ \t]*\((?:option[ \t]+|보기[ \t]*)?(?P<x>[A-Z])\)", re.IGNORECASE
)
_EN_POSTFIX = re.compile(
    r"[ \t]+is[ \t]+(?:the[ \t]+)?(?:single[ \t]+)?(?:most[ \t]+(?:likely|appropriate|probable|suitable|consistent)|best|correct|right)"
    r"(?:[ \t]+[A-Za-z][A-Za-z'\-]*){0,4}?(?=[ \t]*(?:[.!\n]|$))",
    re.IGNORECASE,
)
_KO_POSTFIX = re.compile(
    r"[ \t]*(?:보기|선택지)?[ \t]*(?:가|이)[ \t]*(?:가장[ \t]*(?:적절|적합|옳|알맞|타당|올바르|올바|바람직|가능성이?[ \t]*높|유력)[가-힣]*"
    r"|(?:최종[ \t]*)?(?:정답|답)(?:입니다|이다|임|이에요|예요)?)(?=[ \t]*(?:[.!。]|\n|$))"
)
_SENTENCE_LEAD = re.compile(
    r"[ \t>*#_\-•+]*(?:(?:so|thus|therefore|hence|overall|따라서|그러므로|결론적으로|결국|즉)[ \t]*[,:]?[ \t]*)?"
    r"(?:(?:option|choice|보기|선택지)[ \t]+)?",
    re.IGNORECASE,
)


def _opens_sentence(body: str, pos: int) -> bool:
    """Does a sentence start at ``pos``, after markup, a connective or an option word at most?"""
    floor = max(0, pos - 200)
    start = max(body.rfind(c, floor, pos) for c in ".!?。\n") + 1
    if start == 0 and floor > 0:
        return False  # no sentence opens with 200 characters of lead
    return _SENTENCE_LEAD.fullmatch(body, start, pos) is not None


_MARKER_GAP = re.compile(r"[ \t:=]*")
_LEAD_KEYS = {  # words one of which every match holds
    _EN_LEAD.pattern: ("most", "best", "correct", "right", "final"),
    _KO_LEAD.pattern: ("가장",),
    PREFIX_MARKER.pattern: PREFIX_MARKER_KEYS,
}


def _plain(body: str, lead: int, rest_from: int) -> bool:
    """No conditional, report or hedge reaches the statement (v2's rules, and the English/Korean hedges)."""
    return hedge_of(sentence_before(body, lead), sentence_rest(body, rest_from)) == "plain"


def _named(body: str, pos: int, options: tuple[str, ...], texts: Mapping[str, str] | None, end: re.Pattern[str]) -> tuple[str | None, int] | None:
    """What a lead names at ``pos``: a letter, an option's text, or words with a letter in brackets."""
    token = token_at(body, pos, options, option_texts=texts)
    if token is not None and not body[token.start : token.end].strip("()[]* ").isdigit():
        if token.conflict is not None:
            return None, token.end
        stop = end.match(body, token.end)
        if stop is not None or token.text_match:
            return token.value, (stop.end() if stop else token.end)
        return None
    named = _NAMED_IN_BRACKETS.match(body, pos)
    if named is not None and named.group("x").upper() in options and end.match(body, named.end()):
        letter = named.group("x").upper()
        by_text = option_by_text(named.group("words"), texts)
        return (letter if by_text in (None, letter) else None), named.end()
    letter = text_at(body, pos, texts)
    return (letter, pos) if letter else None


def sentence_statements(body: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> list[Found]:
    """``The most likely diagnosis is B.``, ``B is the most likely diagnosis.``, ``C가 가장 적절합니다.``."""
    out = []
    for lead_re, end in ((_EN_LEAD, _EN_END), (_KO_LEAD, _KO_END), (PREFIX_MARKER, _KO_END)):
        if lead_re is PREFIX_MARKER and "(" not in body:
            continue  # a marker counts here only before words with a bracketed letter
        for lead in scan(lead_re, body, _LEAD_KEYS[lead_re.pattern]):
            pos = lead.end()
            if lead_re is PREFIX_MARKER:  # "정답은 경구 항생제(C)입니다": only words with a bracketed letter
                pos = _MARKER_GAP.match(body, pos).end()
                named = _NAMED_IN_BRACKETS.match(body, pos)
                if named is None or not (_KO_END.match(body, named.end()) or _EN_END.match(body, named.end())):
                    continue
            got = _named(body, pos, options, texts, end)
            if got is None:
                continue
            letter, stop = got
            if letter is not None and re.match(r"[ \t]*(?:,|/|또는|혹은|or\b|and\b|와|과)[ \t]*\(?[A-E]\b", body[stop : stop + 12]):
                letter = None  # "the most likely is B or C"
            if _plain(body, lead.start(), stop):
                out.append(Found(lead.start(), letter))
    for m in token_matches(body, options, f"{_EN_POSTFIX.pattern}|{_KO_POSTFIX.pattern}",
                           keys=("most", "best", "correct", "right", "가장", "답")):
        start = m.start()
        if start > 0 and body[start - 1].isalnum() and not "가" <= body[start - 1] <= "힣":
            continue
        # "B is the most likely diagnosis." opens its sentence; "..., C가 가장 적절합니다." may stand anywhere
        tail = (_EN_POSTFIX.match(body, m.end()) if _opens_sentence(body, start) else None) or _KO_POSTFIX.match(body, m.end())
        if tail is None:
            continue
        token = token_at(body, start, options, option_texts=texts)
        if token is None or token.conflict is not None or body[token.start : token.end].strip("()[]* ").isdigit():
            continue
        if tail is not None and _plain(body, token.start, tail.end()):
            out.append(Found(token.start, token.value))
    return out


def text_at(body: str, pos: int, texts: Mapping[str, str] | None) -> str | None:
    """The option whose text starts at ``pos`` (within its line, at most 400 characters on)."""
    if not texts:
        return None
    line_end = body.find("\n", pos, pos + 400)
    if line_end >= 0 or pos + 400 >= len(body):
        return option_by_text(body[pos : line_end if line_end >= 0 else len(body)], texts)
    return option_by_text(body[pos : pos + 400] + "\x00", texts)  # the cut is no end of the reply


# -- labels under a heading word or in brackets, and a bracketed last line ------------------------

_LABEL_WORDS = (
    r"(?:최종[ \t]*)?(?:정답|답|결론|선택|판단)|(?:final[ \t]+)?(?:answer|choice|conclusion|verdict|selection)"
    r"|答案|最终答案|最終答案|结论|結論|正解|答え|解答"
)
_LABEL_LINE = re.compile(
    rf"^[ \t>]*(?:(?P<h>#{{1,6}})[ \t]*(?:\*\*)?(?:{_LABEL_WORDS})(?:\*\*)?"
    rf"|(?P<b>[【「『\[〔《〈(])[ \t]*(?:{_LABEL_WORDS})[ \t]*[】」』\]〕》〉)])[ \t]*[:：]?[ \t]*(?:\*\*)?[ \t]*",
    re.IGNORECASE | re.MULTILINE,
)
_LINE_MARKUP = re.compile(r"[ \t]*(?:[-*•+>][ \t]+)?")
_BRACKETED_LINE = re.compile(
    rf"^[ \t]*(?:[{re.escape(_OPEN)}](?P<a>[A-Z])[{re.escape(_CLOSE)}]|\*\*[ \t]*(?P<b>[A-Z])[ \t]*[.)]?[ \t]*\*\*)[ \t]*[.。]?[ \t]*$",
    re.MULTILINE,
)


def label_statements(body: str, options: tuple[str, ...], texts: Mapping[str, str] | None) -> list[Found]:
    """``### 결론: C``, ``## Final choice`` then ``C. Oral antibiotics``, ``【정답】 C``, ``[Answer] D``."""
    out = []
    for lead in _LABEL_LINE.finditer(body):
        line_end = body.find("\n", lead.end())
        line_end = len(body) if line_end < 0 else line_end
        pos = lead.end()
        if not body[pos:line_end].strip(" \t*"):  # the label is on the next non-empty line
            nxt = re.compile(r"\s*").match(body, line_end).end()
            if nxt >= len(body):
                continue
            pos = _LINE_MARKUP.match(body, nxt).end()
            line_end = body.find("\n", pos)
            line_end = len(body) if line_end < 0 else line_end
        token = token_at(body, pos, options, after_marker=True, option_texts=texts)
        letter = None
        if token is not None and not body[token.start : token.end].strip("()[]* ").isdigit():
            rest = body[token.end : line_end]
            if token.conflict is None and (token.labelled or not rest.strip(" .*") or token.text_match):
                letter = token.value
            if letter and any(
                (o := token_at(body, m.start(), options)) is not None and o.labelled and o.value != letter
                for m in re.finditer(r"(?<![A-Za-z])[(\[]?[A-Z][.):\]]", rest)
            ):
                letter = None  # the line names another label too
        else:
            letter = text_at(body, pos, texts)
        if letter is None or HEDGE.search(body[pos:line_end]) or _CJK_HEDGE.search(body[pos:line_end]):
            continue
        if _plain(body, pos, pos):
            out.append(Found(lead.start(), letter))
    return out


def bracketed_last_line(body: str, options: tuple[str, ...]) -> Found | None:
    """The last line is only ``【B】``, ``「C」``, ``[D]``, ``(E)`` or ``**B**``, and no other line is."""
    lines = list(_BRACKETED_LINE.finditer(body))
    if len(lines) != 1:
        return None
    m = lines[0]
    if body[m.end() :].strip():
        return None
    letter = m.group("a") or m.group("b")
    return Found(m.start(), letter) if letter in options else None
