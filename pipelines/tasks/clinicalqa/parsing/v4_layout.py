"""Parser v4's readings of a reply's layout and of other names for an option.

Three styles that held-out replies showed and no sentence rule can read (docs/adding-a-task.md,
ClinicalQA answer parsers):

- **Other names for an option** (:func:`renamed`): a circled digit (``③``; not one opening a line,
  where it numbers a list), a Korean ordinal word (``세 번째 보기``, ``두 번째가``), an English or
  Chinese ordinal (``the third option``, ``第三个选项``), a lower-case letter that a Korean particle
  or copula follows (``정답은 c입니다``, ``b가 정답``; not one that ends a Latin word, as in
  ``vitamin c가``), and a letter in less common brackets (``〔B〕``, ``《C》``). The reply is
  rewritten with the option's letter and read again by v3's rules, so their bounds (hedges,
  conditionals, several answers) apply unchanged.
- **A markdown table with a verdict column** (:func:`table_verdict`): rows labelled by option, one
  cell a verdict (``✅``/``❌``, ``정답``/``오답``, ``O``/``X``, ``correct``/``incorrect``). Exactly one
  row marked right among at least two verdict rows gives its letter; two marked right, or a hedged
  mark (``△``, ``?``), give none.
- **Rejected, then a final letter** (:func:`rejected_then_final`): a letter in a sentence that goes
  on to reject it (``The answer is A, but that is wrong``, ``정답은 A라고 생각했지만 틀렸다``), then
  another letter alone on the last line: the last one is the answer. The rejecting sentence is
  looked for in the 4,000 characters before that line.
"""

from __future__ import annotations

import re
import unicodedata

_CIRCLED = "①②③④⑤⑥⑦⑧⑨"
_LINE_OPENING_CIRCLED = re.compile(rf"(?m)^[ \t>*\-•+]*[{_CIRCLED}]")
_KO_ORDINALS = {"첫": 0, "두": 1, "세": 2, "네": 3, "다섯": 4, "여섯": 5, "일곱": 6, "여덟": 7, "아홉": 8}
_KO_ORDINAL = re.compile(
    r"(?<![가-힣])(?P<n>첫|두|세|네|다섯|여섯|일곱|여덟|아홉)[ \t]*번[ \t]*째(?:[ \t]*(?:보기|선택지|항목|옵션))?"
    r"(?=[ \t]*(?:이|가|은|는|을|를|입니다|이다|예요|이에요|임|[.!。,]|\n|$))"
)
_EN_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4}
_EN_ORDINAL = re.compile(r"\bthe[ \t]+(?P<n>first|second|third|fourth|fifth)[ \t]+(?:option|choice|answer[ \t]+choice)\b",
                         re.IGNORECASE)
_ZH_ORDINALS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4}
_ZH_ORDINAL = re.compile(r"第(?P<n>[一二三四五])(?:个|個)?(?:选项|選項|项|項)")
_LOWER_IN_KOREAN = re.compile(
    r"(?<![A-Za-z0-9])(?<![A-Za-z][ \t])(?P<l>[a-z])(?=[이가입을를은는임]|[ \t]*(?:번|보기)[ \t]*(?:이|가|입|을|를))"
)
_LOWER_AFTER_MARKER = re.compile(r"(?<![가-힣])(?:최종[ \t]*)?(?:정답|답)(?:은|는|:)[ \t]*(?P<l>[a-z])(?=[ \t]*(?:[.。]|\n|$))")
_RARE_BRACKETS = re.compile(r"[〔《〈〖](?P<l>[A-Z])[〕》〉〗]")


def renamed(text: str, options: tuple[str, ...]) -> str:
    """``text`` with other names for an option written as its letter (see the module docstring).

    Circled digits are read before normalisation (NFKC turns ``③`` into ``3``, which could be a
    count); the result is normalised, ready for the rules that read a raw reply.
    """
    opening = {m.end() - 1 for m in _LINE_OPENING_CIRCLED.finditer(text)}

    def circled(m: re.Match[str]) -> str:
        i = _CIRCLED.index(m.group())
        return f"({options[i]})" if i < len(options) and m.start() not in opening else m.group()

    text = re.sub(f"[{_CIRCLED}]", circled, text)
    body = unicodedata.normalize("NFKC", text)

    def by_index(table: dict[str, int], fallback: str):
        def sub(m: re.Match[str]) -> str:
            i = table[m.group("n").lower() if fallback == "en" else m.group("n")]
            if i >= len(options):
                return m.group()
            return f"option {options[i]}" if fallback == "en" else options[i]
        return sub

    body = _KO_ORDINAL.sub(by_index(_KO_ORDINALS, "ko"), body)
    body = _EN_ORDINAL.sub(by_index(_EN_ORDINALS, "en"), body)
    body = _ZH_ORDINAL.sub(by_index(_ZH_ORDINALS, "zh"), body)
    lowered = {o.lower() for o in options}

    def upper(m: re.Match[str]) -> str:
        return m.group().upper() if m.group("l") in lowered else m.group()

    body = _LOWER_IN_KOREAN.sub(upper, body)
    body = _LOWER_AFTER_MARKER.sub(lambda m: m.group()[:-1] + upper(m)[-1:], body)  # the letter ends the match
    return _RARE_BRACKETS.sub(lambda m: f"({m.group('l')})" if m.group("l") in options else m.group(), body)


# -- a markdown table with a verdict column -------------------------------------------------------

_RIGHT = re.compile(r"^(?:✅|✔|✓|☑|⭕|○|◯|◎|O|정답|맞음|적절|correct|right|true|yes)\b|^(?:✅|✔|✓|☑|⭕|○|◯|◎)",
                    re.IGNORECASE)
_WRONG = re.compile(r"^(?:❌|✗|✘|×|X|❎|오답|틀림|부적절|incorrect|wrong|false|no)\b|^(?:❌|✗|✘|×|❎)", re.IGNORECASE)
_UNSURE = re.compile(r"△|▲|\?|가능|partial|possible|maybe|부분", re.IGNORECASE)
_ROW = re.compile(r"(?m)^[ \t]*\|(?P<cells>.*)\|[ \t]*$")
_LABEL_CELL = re.compile(r"^[ \t*_]*[(\[]?(?P<l>[A-Z])[)\].:]?(?:[ \t*_]|$)")


def table_verdict(body: str, options: tuple[str, ...]) -> str | None:
    """The one option a markdown table marks right, among at least two rows with a verdict; else None."""
    right: list[str] = []
    verdicts = 0
    for row in _ROW.finditer(body):
        cells = [c.strip() for c in row.group("cells").split("|")]
        if not cells or all(set(c) <= set("-: ") for c in cells):
            continue  # the header's rule
        label = next((m.group("l") for c in cells[:2] if (m := _LABEL_CELL.match(c))), None)
        if label is None or label not in options:
            continue
        marks = [c.strip("*_ ") for c in cells[1:]]
        if any(_UNSURE.search(c) and (_RIGHT.match(c) or not _WRONG.match(c)) for c in marks if _RIGHT.match(c) or c in ("△", "▲")):
            return None  # a hedged mark
        is_right = any(_RIGHT.match(c) for c in marks)
        is_wrong = any(_WRONG.match(c) for c in marks)
        if is_right and is_wrong:
            return None
        if is_right or is_wrong:
            verdicts += 1
        if is_right:
            right.append(label)
    if verdicts >= 2 and len(set(right)) == 1:
        return right[0]
    return None


# -- a rejected letter, then the final letter alone on the last line ------------------------------

_LONE_LAST = re.compile(r"(?:^|\n)[ \t>*_#\-]*(?:\*\*)?[(\[]?(?P<l>[A-Z])[)\]]?(?:\*\*)?[ \t]*[.。]?[ \t]*\Z")
_LONE_LINE = re.compile(r"^[ \t>*_#\-]*(?:\*\*)?[(\[]?[A-Z][)\]]?(?:\*\*)?[ \t]*[.。]?[ \t]*$")
_REJECTION = re.compile(
    r"(?:\b(?:but|however|yet)\b|지만|그러나|하지만|但|不过|不過|然而|しかし|ただし|が、)[^.!?。\n]{0,120}?"
    r"(?:\b(?:wrong|incorrect|not\s+(?:correct|right|the\s+answer|it)|ruled?\s+out|excluded|mistaken)\b"
    r"|틀[렸리린렸]|오답|아니|아닙|제외|배제|맞지[ \t]*않|错|錯|不对|不對|不正确|不正確|排除|不是|誤り|違う|間違|不正解|除外|ではない)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?。\n]")
_REJECTION_REACH = 4000  # characters before the last line where the rejected letter's sentence is looked for


def rejected_then_final(body: str, options: tuple[str, ...], rejected: str | None) -> str | None:
    """The letter alone on the last line, when a sentence before it names another option and rejects it.

    ``rejected`` is the letter v3's rules read (the one a later rejection withdraws), or None where
    they read nothing: then any option named in a rejecting sentence will do.
    """
    last = _LONE_LAST.search(body)
    if last is None or last.group("l") not in options:
        return None
    final = last.group("l")
    before = body[: last.start()].rstrip()
    if not before or _LONE_LINE.match(before[before.rfind("\n") + 1 :]):
        return None  # a list of letters, not a final answer
    window = max(0, len(before) - _REJECTION_REACH)
    for rejection in reversed(list(_REJECTION.finditer(before, window))):  # the latest rejecting sentence decides
        start = max(max(before.rfind(c, max(0, rejection.start() - 200), rejection.start()) for c in ".!?。\n") + 1,
                    rejection.start() - 200)
        named = [m.group() for m in re.finditer(r"(?<![A-Za-z])[A-Z](?![A-Za-z0-9])", before[start : rejection.start()])]
        named = [n for n in named if n in options and n != final and (rejected is None or n == rejected)]
        if not named:
            continue
        stop = _SENTENCE_END.search(before, rejection.end())
        if _named_after(before, stop.end() if stop else len(before), named[-1]):
            return None  # committed to again after its rejection
        return final
    return None


def _named_after(before: str, pos: int, letter: str) -> bool:
    """Is ``letter`` named again after its rejecting sentence (committed to after all)?"""
    return re.search(rf"(?<![A-Za-z]){letter}(?![A-Za-z0-9])", before[pos:]) is not None
