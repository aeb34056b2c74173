"""Where parser v3 looks, found cheaply: patterns skipped when their words are absent, tokens found near their tails.

Parser v3 reads a reply with a few dozen regular expressions (``parsing.v3_scan``, ``v3_base``,
``v3_rules``). Python's engine tries a pattern of many alternatives at every character, about
0.15 microseconds each: 10 ms for one 64 KiB reply, and a reply may be 64 KiB of answer letters
(docs/adding-a-task.md, "Answer parsing"). Two things here keep a reply's cost near its length with
a small factor, and never change what is found:

- :func:`scan` skips a pattern when the reply holds none of its words (every match holds one);
- :func:`tokens_followed_by` finds the answer tokens that a tail follows (``B가 정답``, ``C입니다.``)
  by scanning only around the places where a tail can start: each tail names an anchor (a
  character a match must reach, such as ``답`` or a sentence end) and the characters that may stand
  between the tail's start and it. The tokens are the very matches a scan of the whole reply gives,
  because a scan resumed at a position that no token can straddle (a sync point) continues exactly
  as the whole scan would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from pipelines.tasks.clinicalqa.parsing import tokens

_LONG = 4096  # characters: a shorter reply is scanned whole (cheaper than finding where to look)
_REACH = 256  # characters: a scan this far behind the next place to look restarts at a sync point
_GAP = 64  # characters: spans closer than this are scanned as one


@lru_cache(maxsize=16)
def token_pattern(options: tuple[str, ...]) -> re.Pattern[str]:
    """``tokens.token_pattern`` with possessive bracket runs: the same matches, with the same groups.

    A bracket run is followed by ``**``/``__`` or a letter, which it cannot take, so stopping it
    early never helps a match; the shared pattern still tried every split of a run between its two
    halves, cubic in all on ``"(" * 4000`` (266 s).
    """
    shared = tokens.token_pattern(options).pattern
    own = shared.replace("]*(?:\\*\\*|__)?[", "]*+(?:\\*\\*|__)?[").replace("]*)(?P<value>", "]*+)(?P<value>")
    own = own[: -len("]*)")] + "]*+)" if own.endswith("]*)") else own
    if own.count("]*+") != 4:  # both halves of the opening run and of the closing run
        raise RuntimeError(f"parsing.tokens.token_pattern changed shape; v3_find.token_pattern needs updating: {shared}")
    return re.compile(own)


# Characters that a case-insensitive pattern matches to an ASCII letter although ``str.lower`` does not
# turn them into it (``(?i)i`` matches ``ı`` and ``İ``, ``(?i)s`` matches ``ſ``, ``(?i)k`` matches ``K``).
_ODD_CASES = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_FOLDED: dict[str, str] = {}


def folded(text: str) -> str:
    """``text`` lower-cased so that every case-insensitive match of an ASCII word holds that word in lower case."""
    found = _FOLDED.get(text)
    if found is None:
        if len(_FOLDED) >= 8:
            _FOLDED.clear()
        odd = any(c in text for c in "\u0130\u0131\u017f\u212a")
        found = _FOLDED[text] = (text.translate(_ODD_CASES) if odd else text).lower()
    return found


def may_hold(text: str, keys: tuple[str, ...]) -> bool:
    """Does ``text`` hold one of ``keys`` (lower-case words)? False means that no match of a pattern
    whose every match holds one of them can occur."""
    low = folded(text)
    return any(k in low for k in keys)


def scan(pattern: re.Pattern[str], text: str, keys: tuple[str, ...]) -> list[re.Match[str]]:
    """``list(pattern.finditer(text))``, or nothing, without a scan, when ``text`` holds none of ``keys``."""
    return list(pattern.finditer(text)) if may_hold(text, keys) else []


# Words one of which every match of the shared answer marker holds (정답, 해답, 답변, 답; answer; correct option).
PREFIX_MARKER_KEYS = ("답", "answer", "option", "choice")


@dataclass(frozen=True)
class Anchor:
    """Where a tail can start: at most ``back`` characters (a class) before a match of ``at`` (a
    pattern that consumes one character, so that ``finditer`` meets every place it matches), or
    before the end of the text when ``at_end``."""

    at: re.Pattern[str]
    back: str
    at_end: bool = False


def _inline(pattern: re.Pattern[str]) -> str:
    return f"(?i:{pattern.pattern})" if pattern.flags & re.IGNORECASE else f"(?:{pattern.pattern})"


@lru_cache(maxsize=32)
def _followed(options: tuple[str, ...], tails: tuple[re.Pattern[str], ...], every_start: bool) -> re.Pattern[str]:
    token = f"(?>{token_pattern(options).pattern})"  # atomic: the token exactly as token_pattern matches it
    tail = "|".join(_inline(t) for t in tails)
    if every_start:
        return re.compile(f"(?={token}(?:{tail}))")
    return re.compile(f"{token}(?:(?={tail})(?P<followed>))?")


@lru_cache(maxsize=16)
def _sync_pattern(options: tuple[str, ...]) -> re.Pattern[str]:
    """On the reversed text: a character no token holds, or a blank that a token could not go on from.

    A token is brackets, bold marks, a letter or digit, ``번``/``째`` and the blanks before ``번``, so
    no token holds both the character before such a position and the one at it.
    """
    chars = "".join(tokens._OPENERS + tokens._CLOSERS) + "*_번째" + "".join(o + o.lower() for o in options)
    chars += "".join(str(i) for i in range(1, min(len(options), 9) + 1))
    return re.compile(rf"[^\s{re.escape(chars)}]|(?<=[^\s번])\s")


_REVERSED: dict[str, str] = {}


def _reversed(text: str) -> str:
    found = _REVERSED.get(text)
    if found is None:
        if len(_REVERSED) >= 4:
            _REVERSED.clear()
        found = _REVERSED[text] = text[::-1]
    return found


def _windows(text: str, anchors: tuple[Anchor, ...]) -> list[tuple[int, int]]:
    """The spans where a tail of ``anchors`` can start, merged and in order."""
    n, rev = len(text), _reversed(text)
    spans = []
    for anchor in anchors:
        back = re.compile(f"[{anchor.back}]*")
        ends = [m.start() for m in anchor.at.finditer(text)] + ([n] if anchor.at_end else [])
        spans += [(c - (back.match(rev, n - c).end() - (n - c)), c) for c in ends]
    spans.sort()
    merged: list[tuple[int, int]] = []
    for w, k in spans:
        if merged and w <= merged[-1][1] + _GAP:  # scanning a short gap costs less than a window
            if k > merged[-1][1]:
                merged[-1] = (merged[-1][0], k)
        else:
            merged.append((w, k))
    return merged


def _sync(text: str, options: tuple[str, ...], w: int, floor: int) -> int | None:
    """The last sync point below ``w`` (so that a token ending at ``w`` or later starts at it or after),
    down to ``floor``: 0 counts as one; None when there is none above ``floor``."""
    n = len(text)
    if w <= 0:
        return 0
    found = _sync_pattern(options).search(_reversed(text), n - w + 1, n - floor)
    if found is not None:
        return n - found.start()
    return 0 if floor == 0 else None


def tokens_followed_by(text: str, options: tuple[str, ...], tails: tuple[re.Pattern[str], ...],
                       anchors: tuple[Anchor, ...], every_start: bool = False) -> list[int]:
    """Where the answer tokens that one of ``tails`` matches right after start.

    ``every_start``: every position where ``token_pattern`` matches (``search`` from each start + 1),
    else the tokens of ``token_pattern(options).finditer(text)``. A rule that reads only such tokens
    builds a ``Token`` (the costly part) for them alone, instead of for every letter of the reply.
    ``anchors`` say where each tail can start (every match of a tail starts in one of their spans);
    a long reply is scanned only from a sync point before each span to its end.
    """
    pattern = _followed(options, tails, every_start)
    if len(text) < _LONG:
        found = list(pattern.finditer(text))
    else:
        found = []
        it, cur = None, None
        for w, k in _windows(text, anchors):
            if it is not None:
                if cur is None:
                    break  # the whole scan would find nothing more
                if cur.start() > k:
                    continue
                if cur.start() < w - _REACH and (s := _sync(text, options, w, cur.start())) is not None:
                    it = pattern.finditer(text, s)
                    cur = next(it, None)
            if it is None:
                it = pattern.finditer(text, _sync(text, options, w, 0) or 0)
                cur = next(it, None)
            while cur is not None and cur.start() <= k:
                found.append(cur)
                cur = next(it, None)
    if every_start:
        return [m.start() for m in found]
    return [m.start() for m in found if m.group("followed") is not None]
