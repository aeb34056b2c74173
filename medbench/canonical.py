"""The one base of every spec Struct, and the canonical form that spec hashes are taken over.

Spec hashes enter every run id, so the form they are computed from decides when results are
re-keyed (and re-paid for). It is the decoded spec with every field that equals its default left
out: adding an optional field later, with a default that keeps today's meaning, leaves every
existing hash (and so every result) as it is. Changing a default *does* change meaning without
changing a hash, which is why tests/unit/pipelines/test_specs.py locks the default values of every spec Struct.

msgspec's own ``omit_defaults`` compares by identity (plus None and empty collections), so a
decoded ``(65.0, 70.0, 75.0)`` or ``20261029`` equal to its default would still be written; the
omission here compares by type and value. A Struct may name ``local_fields`` (a ClassVar): values the
loader fills in for this machine (an absolute path), which are neither hashed nor published, so
that the same spec gives the same ids on every checkout. This module imports nothing but msgspec: the backend
settings Structs (``pipelines.backends.settings``) build on it without importing the spec loader.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec


class SpecStruct(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    """Base of every spec Struct: immutable, strict (an unknown key is an error), keyword-only."""


class StrictStruct(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Strict like a spec, but not a spec: request bodies and the maintainers' policy are never hashed,
    so their defaults are not locked with the spec Structs' (tests/unit/pipelines/test_specs.py)."""


def _default_of(field: msgspec.structs.FieldInfo) -> Any:
    if field.default is not msgspec.NODEFAULT:
        return field.default
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return msgspec.NODEFAULT


def _equal(value: Any, default: Any) -> bool:
    """Same type and same value (``True`` is not ``1``; ``1`` is not ``1.0``), recursively for tuples."""
    if type(value) is not type(default):
        return False
    if isinstance(value, (tuple, list)):
        return len(value) == len(default) and all(_equal(a, b) for a, b in zip(value, default))
    return bool(value == default)


def defaults(cls: type[msgspec.Struct]) -> dict[str, Any]:
    """{field: default} of a Struct class, fields without a default left out (the defaults lock);
    local fields are never hashed, so they are left out too."""
    out = {}
    local = getattr(cls, "local_fields", ())
    for field in msgspec.structs.fields(cls):
        if field.name in local:
            continue
        default = _default_of(field)
        if default is not msgspec.NODEFAULT:
            out[field.encode_name] = spec_builtins(default)
    return out


@functools.cache
def struct_fields(cls: type) -> tuple[msgspec.structs.FieldInfo, ...]:
    """``msgspec.structs.fields`` of a Struct type, kept per type: msgspec evaluates the class's
    annotations on every call, which made hashing a hundred task specs at each publish cost 0.2 s
    (docs/benchmarks.md, "Publishing at scale")."""
    return msgspec.structs.fields(cls)


def spec_builtins(value: Any, *, keep_defaults: bool = False) -> Any:
    """``msgspec.to_builtins`` with every Struct field equal to its default omitted (tags kept);
    with ``keep_defaults`` every field is written (a full record of what ran)."""
    if isinstance(value, msgspec.Struct):
        config = value.__struct_config__
        out: dict[str, Any] = {}
        if config.tag_field is not None:
            out[config.tag_field] = config.tag
        local = getattr(type(value), "local_fields", ())
        for field in struct_fields(type(value)):
            if field.name in local:
                continue
            item = getattr(value, field.name)
            default = _default_of(field)
            if not keep_defaults and default is not msgspec.NODEFAULT and _equal(item, default):
                continue
            out[field.encode_name] = spec_builtins(item, keep_defaults=keep_defaults)
        return out
    if isinstance(value, dict):
        return {key: spec_builtins(item, keep_defaults=keep_defaults) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [spec_builtins(item, keep_defaults=keep_defaults) for item in value]
    return msgspec.to_builtins(value)


def canonical_json(value: Any) -> bytes:
    """Canonical JSON: builtins only, defaults omitted, keys sorted, no whitespace; dates are ISO strings."""
    return msgspec.json.encode(spec_builtins(value), order="sorted")
