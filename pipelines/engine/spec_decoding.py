"""Decoding one spec file strictly, with errors a spec author can act on: ``file: key: problem``.

msgspec's messages name a JSON path (``$.settings.sede``); spec authors write TOML keys, so the
message is rephrased to name the key as written, and a file that is not UTF-8 or not TOML says so
with the line. The CLI prints these on one line without a traceback (exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from pipelines.core.specs import SpecError


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


def _decode(path: Path, typ: type) -> Any:
    try:
        return msgspec.toml.decode(_read(path), type=typ)
    except msgspec.ValidationError as exc:
        raise SpecError(f"{path}: {_explain(exc)}") from None
    except msgspec.DecodeError as exc:
        raise SpecError(f"{path}: not valid TOML ({exc})") from None


def _explain(exc: msgspec.ValidationError) -> str:
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
