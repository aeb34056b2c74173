"""What of a model's settings may be published: only what its settings Struct declares public.

Why an allow-list: results publish ``config.backend_settings`` (``run.json``, ``result.json``, the
API, the site) and the warehouse publishes the model spec (DuckDB ``models.spec``). The first
version redacted values whose *names* looked secret (``token``, ``api_key``, ``password``, ...),
so ``clientSecret``, ``accessToken``, ``privateKey``, ``bearerToken``, ``pass``, ``creds`` and
``?accessToken=`` were published verbatim: no list of secret names is ever complete. Now each
backend settings Struct (``pipelines.backends.settings``) sorts its fields:

* ``public_fields``: typed values (model id, dtype, batch size, seed, ...), published as they are
  (a nested settings Struct listed here is published through its own declarations);
* ``url_fields``: scheme, host, port and path kept; userinfo, every query value (keys kept) and
  the fragment become ``<redacted>``;
* ``path_fields``: a local file, published as its file name plus ``<field>_sha256`` (what a reader
  needs to check they hold the same file, without a maintainer's home folder);
* ``free_form_fields``: tables passed through to a server or a library (``extra_body``,
  ``engine.extra``, ``chat_template_kwargs``): their keys are kept, every value becomes
  ``<redacted>``.

A field declared nowhere is published like a free-form one, so a field added without a decision
leaks nothing (and tests/unit/pipelines/test_redact_allow_list.py fails until it is declared).

``REDACTED`` is the one marker, also used by the openai backend for a key a server echoes back.
Only what is *published* is redacted. Spec hashes (and so run ids) are taken over the spec with each
value redacted here replaced by its HMAC under the maintainer's identity key
(``medbench.identity_form``, which sorts fields by the same declarations), so a published hash
cannot confirm a guessed secret; generation keys are taken over the unredacted settings and are never
published.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgspec

from pipelines.backends.replay_pin import file_sha256
from medbench.canonical import spec_builtins

REDACTED = "<redacted>"


def has_userinfo(url: str) -> bool:
    """Whether ``url`` carries ``user[:password]@`` before its host."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return "@" in parts.netloc


def _redact_query(query: str) -> str:
    """Every value replaced, keys kept; a piece without ``=`` may itself be the token, so it goes whole."""
    return "&".join(f"{piece.split('=', 1)[0]}={REDACTED}" if "=" in piece else REDACTED
                    for piece in query.split("&") if piece)


def redact_url(url: str) -> str:
    """``url`` with its userinfo, every query value and its fragment replaced by ``<redacted>``.

    A URL that cannot be parsed is replaced whole: better nothing than a leaked token."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        host = f"[{host}]" if ":" in host else host
        netloc = f"{REDACTED}@{host}" + (f":{port}" if port else "")
    query = _redact_query(parts.query) if parts.query else ""
    fragment = REDACTED if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_tree(value: Any) -> Any:
    """A free-form value as published: mappings keep their keys, lists their length, every leaf is ``<redacted>``."""
    if isinstance(value, dict):
        return {key: redact_tree(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_tree(item) for item in value]
    return REDACTED


def _public_value(value: Any) -> Any:
    """A declared-public value; a URL in it (which no typed field should hold) still loses its secrets."""
    if isinstance(value, str) and "://" in value:
        return redact_url(value)
    if isinstance(value, list):
        return [_public_value(item) for item in value]
    return value


def _declared(cls: type, name: str) -> frozenset[str]:
    return frozenset(getattr(cls, name, ()))


def _public(struct: msgspec.Struct, shown: dict[str, Any]) -> dict[str, Any]:
    """``shown`` (``spec_builtins`` of ``struct``) with each field published as ``struct``'s class declares."""
    cls = type(struct)
    names = {field.encode_name: field.name for field in msgspec.structs.fields(cls)}
    public, urls = _declared(cls, "public_fields"), _declared(cls, "url_fields")
    paths = _declared(cls, "path_fields")
    out: dict[str, Any] = {}
    for key, value in shown.items():
        name = names.get(key)
        if name is None:  # the tag (``rule``, ``estimator``) of a tagged union: part of the type
            out[key] = value if key == cls.__struct_config__.tag_field else REDACTED
            continue
        item = getattr(struct, name)
        if name in public and isinstance(item, msgspec.Struct):
            out[key] = _public(item, value)
        elif name in public:
            out[key] = _public_value(value)
        elif name in urls and (value is None or isinstance(value, str)):
            out[key] = value if value is None else redact_url(value)
        elif name in paths and isinstance(value, str):
            path = Path(getattr(struct, "resolved", "") or value).expanduser()
            out[key] = path.name
            out[f"{key}_sha256"] = file_sha256(path)
        else:  # free-form, or declared nowhere
            out[key] = redact_tree(value)
    return out


def public_settings(settings: msgspec.Struct, *, keep_defaults: bool) -> dict[str, Any]:
    """The one redaction of a model's settings, for every place that publishes them.

    ``keep_defaults``: every field, defaults included (``config.backend_settings`` of a result);
    without it the hashed form, defaults omitted (the warehouse's ``models.spec``)."""
    return _public(settings, spec_builtins(settings, keep_defaults=keep_defaults))
