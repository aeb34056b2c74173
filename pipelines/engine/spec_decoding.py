"""Decoding one spec file strictly, with errors a spec author can act on: ``file: key: problem``.

msgspec's messages name a JSON path (``$.settings.sede``); spec authors write TOML keys, so the
message is rephrased to name the key as written, and a file that is not UTF-8 or not TOML says so
with the line, and one nested too deeply for the parser says that. The CLI prints these on one line
without a traceback (exit 2).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import msgspec

from medbench.specs import SpecError

MAX_DEPTH = 32  # arrays and tables below the top level of a spec file; the checkout's deepest spec nests 2
_TOML_TYPES = (dt.datetime, dt.date, dt.time)  # values TOML itself decodes, kept as they are


def _read(path: Path) -> bytes:
    """The file's bytes, which must be UTF-8 text (TOML is)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec file ({exc.strerror})") from None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(f"{path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}); save it as UTF-8") from None
    return raw


def decode_strict(path: Path, typ: type) -> Any:
    """The file decoded strictly as ``typ`` (``msgspec.toml.decode(raw, type=typ)``, in two steps so that
    the nesting is bounded before anything walks it recursively)."""
    obj = parse_bounded(path)
    try:
        return msgspec.convert(obj, typ, strict=True, str_keys=True, builtin_types=_TOML_TYPES)
    except msgspec.ValidationError as exc:
        raise SpecError(f"{path}: {explain_validation_error(exc)}") from None


def parse_bounded(path: Path) -> Any:
    """The file's TOML as plain values, nested at most ``MAX_DEPTH`` arrays and tables deep.

    The parser (``tomllib``) recurses once per level, so a file nested 100,000 deep ended the command
    in a ``RecursionError`` and a traceback (issue #22) instead of the spec author's one line.
    """
    try:
        obj = msgspec.toml.decode(_read(path))
    except msgspec.DecodeError as exc:
        raise SpecError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise SpecError(f"{path}: arrays or tables nested too deeply for the TOML parser; "
                        f"a spec nests at most {MAX_DEPTH} levels") from None
    too_deep = _too_deep(obj)
    if too_deep is not None:
        raise SpecError(f"{path}: key `{too_deep}`: nested more than {MAX_DEPTH} levels deep "
                        "(a spec nests a few levels: flatten it)")
    return obj


def _too_deep(obj: Any) -> str | None:
    """The key (as a spec author writes it) of the first array or table nested deeper than ``MAX_DEPTH``
    below the top level, or None; without recursion."""
    stack: list[tuple[Any, str, int]] = [(obj, "", 0)]
    while stack:
        value, key, depth = stack.pop()
        if depth > MAX_DEPTH and isinstance(value, (dict, list)):
            return key
        if isinstance(value, dict):
            stack.extend((v, f"{key}.{k}" if key else str(k), depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, key, depth + 1) for v in value)  # the key names the array, not the item
    return None


def explain_validation_error(exc: msgspec.ValidationError) -> str:
    """Rephrase msgspec's message so it names the key the way a spec author writes it."""
    text = str(exc)
    key = ""
    if " - at `$" in text:
        text, _, where = text.partition(" - at `$")
        key = where.rstrip("`").lstrip(".")
    if text.startswith("Object contains unknown field"):
        field = text.split("`")[1]
        full = f"{key}.{field}" if key else field
        return f"unknown key `{full}` (remove it or fix its spelling)"
    if text.startswith("Object missing required field"):
        field = text.split("`")[1]
        full = f"{key}.{field}" if key else field
        return f"missing required key `{full}`"
    if not key:
        return text
    if text.startswith("Expected"):  # "Expected `int`, got `str`"
        return f"key `{key}`: {text[0].lower()}{text[1:]}"
    if text.startswith("Invalid"):  # "Invalid value 'x'", "Invalid enum value 'x'"
        return f"key `{key}`: invalid value {text.split('value ', 1)[-1]}"
    return f"key `{key}`: {text}"
