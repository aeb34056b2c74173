"""The form a spec hash is taken over: the spec as written, its secrets replaced by keyed hashes.

Why: a spec hash is published beside the redacted spec (the warehouse's ``models.spec``, each
result's ``versions``). Taken over the unredacted settings, it let anyone test guesses of a redacted
value offline: ``clientSecret = "hunter2"`` fell in 5 guesses. Now each value that publication
redacts (``pipelines.backends.redact``: a free-form value, a field declared nowhere, the userinfo,
query values and fragment of a URL) is replaced, before hashing, by
``hmac-sha256:<hex>`` of its canonical JSON under the maintainer's identity key. Two specs that
differ in any value still get different hashes, and nobody without the key can test a guess.

Everything else is hashed as before (public values, and path fields: a replay file's path, which
is not a secret), so a spec without such values keeps its hash and its run ids. The identity key is
part of the deployment's identity: a new key changes the hashes, and so the run ids, of the specs
that hold such values, and only those.

The key (``identity_key``), read only when a spec holds such a value: a demo data directory always
uses the fixed, public ``DEMO_IDENTITY_KEY``, so demo run ids are the same on every machine; any
other reads the file ``$MEDBENCH_IDENTITY_KEY`` names (at least 16 bytes, kept outside the data
directory, like the signing key), and without it such a spec is one clear error
(docs/operations.md "The identity key"). This module imports nothing of the project but the core.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgspec

from medbench.canonical import struct_fields
from medbench.layout import data_root

IDENTITY_KEY_ENV = "MEDBENCH_IDENTITY_KEY"
DEMO_IDENTITY_KEY = b"medbench demo identity key v1 (public: it keys demo data only)"
MARK = "hmac-sha256:"


class IdentityKeyError(RuntimeError):
    """A spec holds a secret or free-form value and no identity key is configured (or readable)."""


def _data_kind() -> str | None:
    try:
        return (data_root() / "KIND").read_text().strip()
    except OSError:
        return None


def identity_key() -> bytes:
    """The HMAC key of secret values: the demo key in a demo data directory, else ``$MEDBENCH_IDENTITY_KEY``'s file."""
    if _data_kind() == "demo":
        return DEMO_IDENTITY_KEY
    configured = os.environ.get(IDENTITY_KEY_ENV)
    if not configured:
        raise IdentityKeyError(
            f"a model's settings hold a secret or free-form value, whose spec hash needs the maintainer's identity "
            f"key: set {IDENTITY_KEY_ENV} to the path of a file of 32 random bytes outside the data directory "
            f"(`head -c 32 /dev/urandom > ~/.config/medbench/identity.key`)")
    try:
        key = Path(configured).expanduser().read_bytes()
    except OSError as exc:
        raise IdentityKeyError(f"cannot read the identity key {configured}: {exc.strerror}; set {IDENTITY_KEY_ENV} "
                               "to a readable file of 32 random bytes") from None
    if len(key) < 16:
        raise IdentityKeyError(f"the identity key {configured} holds {len(key)} bytes; it needs at least 16 random "
                               "bytes (`head -c 32 /dev/urandom > FILE`)")
    return key


def keyed(value: Any) -> str:
    """``hmac-sha256:<hex>`` of ``value``'s canonical JSON under the identity key."""
    body = msgspec.json.encode(value, order="sorted")
    return MARK + hmac.new(identity_key(), body, hashlib.sha256).hexdigest()


def _keyed_tree(value: Any) -> Any:
    """A free-form value as hashed: mappings keep their keys, lists their length, each leaf is keyed
    (the shape publication shows, ``redact_tree``)."""
    if isinstance(value, dict):
        return {key: _keyed_tree(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_keyed_tree(item) for item in value]
    return keyed(value)


def keyed_url(url: str) -> str:
    """``url`` with what ``redact_url`` hides (userinfo, each query value, the fragment) keyed; a URL
    with none of them is returned as written, so its hash stays as it was."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return keyed(url)
    if "@" not in parts.netloc and not parts.query and not parts.fragment:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = keyed(netloc.rsplit("@", 1)[0]) + "@" + (f"[{host}]" if ":" in host else host) + (
            f":{port}" if port else "")
    query = "&".join(f"{piece.split('=', 1)[0]}={keyed(piece.split('=', 1)[1])}" if "=" in piece else keyed(piece)
                     for piece in parts.query.split("&") if piece)
    return urlunsplit((parts.scheme, netloc, parts.path, query, keyed(parts.fragment) if parts.fragment else ""))


def _public_value(value: Any) -> Any:
    if isinstance(value, str) and "://" in value:
        return keyed_url(value)
    if isinstance(value, list):
        return [_public_value(item) for item in value]
    return value


def _settings(struct: msgspec.Struct, shown: dict[str, Any]) -> dict[str, Any]:
    """A backend settings Struct as hashed, field by field as its class declares (the same sorting
    as ``pipelines.backends.redact._public``; paths as written)."""
    cls = type(struct)
    names = {field.encode_name: field.name for field in msgspec.structs.fields(cls)}
    public, urls, paths = (frozenset(getattr(cls, n, ())) for n in ("public_fields", "url_fields", "path_fields"))
    out: dict[str, Any] = {}
    for key, value in shown.items():
        name = names.get(key)
        if name is None:  # the tag of a tagged union: part of the type
            out[key] = value if key == cls.__struct_config__.tag_field else _keyed_tree(value)
            continue
        item = getattr(struct, name)
        if name in public and isinstance(item, msgspec.Struct):
            out[key] = _settings(item, value)
        elif name in public:
            out[key] = _public_value(value)
        elif name in urls and (value is None or isinstance(value, str)):
            out[key] = value if value is None else keyed_url(value)
        elif name in paths:
            out[key] = value
        else:  # free-form, or declared nowhere
            out[key] = _keyed_tree(value)
    return out


def identity_form(value: Any, shown: Any) -> Any:
    """``shown`` (``spec_builtins(value)``) with every backend settings Struct inside ``value`` (one
    declaring ``public_fields``) in its hashed form."""
    if isinstance(value, msgspec.Struct):
        if hasattr(type(value), "public_fields") and isinstance(shown, dict):
            return _settings(value, shown)
        if not isinstance(shown, dict):
            return shown
        names = {field.encode_name: field.name for field in struct_fields(type(value))}
        return {k: identity_form(getattr(value, names[k]), v) if k in names else v for k, v in shown.items()}
    if isinstance(value, (list, tuple)) and isinstance(shown, list) and len(value) == len(shown):
        return [identity_form(a, b) for a, b in zip(value, shown)]
    if isinstance(value, dict) and isinstance(shown, dict):
        return {k: identity_form(value[k], v) if k in value else v for k, v in shown.items()}
    return shown


__all__ = ["DEMO_IDENTITY_KEY", "IDENTITY_KEY_ENV", "IdentityKeyError", "identity_form", "identity_key", "keyed",
           "keyed_url"]
