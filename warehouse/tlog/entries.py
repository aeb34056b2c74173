"""The typed entries of the transparency log, and the exact bytes each leaf hashes.

Why: a leaf is only worth proving if anyone can say what it means. Each entry is one JSON object,
written as canonical JSON (keys sorted, no whitespace, UTF-8: ``warehouse.releases.canonical_json``,
the form the warehouse hashes content with); those bytes, and nothing else, are the leaf's
``entry`` in ``SHA-256(0x00 || entry)``. Four types (docs/transparency-log.md "Entries"):

- ``{"id": RUN_ID, "record_sha256": HEX, "type": "result"}``: a result, by the sha256 of its record;
- ``{"id": RELEASE_ID, "manifest_sha256": HEX, "type": "release"}``: a release, by its manifest's hash;
- ``{"date": "YYYY-MM-DD", "id": RUN_ID, "reason": TEXT, "type": "withdrawal"}``: a withdrawn result;
- ``{"id": NEW_KEY_ID, "new": KEY, "old": KEY | null, "signatures": {"new": B64, "old": B64 | null},
  "type": "key_rotation"}`` with ``KEY = {"key_id": ..., "public_key": B64 of the 32 raw bytes}``:
  a signing key taking over. Both keys sign ``ROTATION_CONTEXT + canonical_json(entry without
  "signatures")``; the log's first entry is a rotation with ``"old": null``, which names the key of
  its first checkpoints, signed by that key alone.

A release, a withdrawal or a key appears at most once (by type and id), a result at most once per
record hash (a rerun under the same run id adds an entry: ``warehouse.tlog.audit.unique_key``); a
log that holds one twice does not verify, so it can never say two things about one release.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from warehouse.releases import canonical_json

TYPES = ("result", "release", "withdrawal", "key_rotation")
ROTATION_CONTEXT = b"medbench transparency log key rotation v1\n"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class EntryError(ValueError):
    """An entry that is not one of the four types, as canonical JSON, with the fields they need."""


def key_id_of(public_key: bytes) -> str:
    """The project's name of a key: the first 16 hex digits of the sha256 of its 32 raw bytes
    (the same rule as ``warehouse.signing``, restated here so the log needs no signer)."""
    return hashlib.sha256(public_key).hexdigest()[:16]


def key_body(public_key: bytes, key_id: str | None = None) -> dict[str, str]:
    """A key as a rotation entry names it: ``key_id`` is the id the key is published under
    (``/v1/keys``, signatures), ``key_id_of`` or, for a demo key, ``demo-`` and that."""
    return {"key_id": key_id or key_id_of(public_key), "public_key": base64.b64encode(public_key).decode()}


def names_key(key_id: Any, public_key: bytes) -> bool:
    """Whether ``key_id`` is a name of ``public_key``: its ``key_id_of``, or that after ``demo-``
    (a demo key says "demo" wherever it appears, the log included)."""
    return key_id in (key_id_of(public_key), "demo-" + key_id_of(public_key))


def record_sha256(record: Any) -> str:
    """The hash a result entry names: sha256 of the record's canonical JSON (any msgspec Struct or
    JSON value; for a result, its ``ResultRecord`` as stored in ``result.json``)."""
    return hashlib.sha256(canonical_json(record)).hexdigest()


def result_entry(run_id: str, record_sha256: str) -> bytes:
    return _checked({"type": "result", "id": run_id, "record_sha256": record_sha256})


def release_entry(release_id: str, manifest_sha256: str) -> bytes:
    return _checked({"type": "release", "id": release_id, "manifest_sha256": manifest_sha256})


def withdrawal_entry(run_id: str, date: str, reason: str) -> bytes:
    return _checked({"type": "withdrawal", "id": run_id, "date": date, "reason": reason})


def rotation_message(old: bytes | None, new: bytes, old_id: str | None = None, new_id: str | None = None) -> bytes:
    """The bytes both keys of a rotation sign (the keys under their published ids)."""
    new_body = key_body(new, new_id)
    body = {"type": "key_rotation", "id": new_body["key_id"], "new": new_body,
            "old": key_body(old, old_id) if old is not None else None}
    return ROTATION_CONTEXT + canonical_json(body)


def rotation_entry(old: bytes | None, new: bytes, sign_old: Callable[[bytes], bytes] | None,
                   sign_new: Callable[[bytes], bytes], old_id: str | None = None, new_id: str | None = None) -> bytes:
    """A key_rotation entry from ``old`` (None for the log's first key) to ``new``, signed by both
    (``sign_*(message) -> raw 64-byte Ed25519 signature``); ``*_id``: the keys' published ids."""
    message = rotation_message(old, new, old_id, new_id)
    if (old is None) != (sign_old is None):
        raise EntryError("a rotation from a key is signed by that key; the first key's entry by the new key alone")
    signatures = {"new": base64.b64encode(sign_new(message)).decode(),
                  "old": base64.b64encode(sign_old(message)).decode() if sign_old else None}
    new_body = key_body(new, new_id)
    body = {"type": "key_rotation", "id": new_body["key_id"], "new": new_body,
            "old": key_body(old, old_id) if old is not None else None, "signatures": signatures}
    return _checked(body)


def parse_entry(entry: bytes) -> dict[str, Any]:
    """The entry as a dict, after checking it is canonical and well-formed (``EntryError`` if not).
    A rotation's signatures are checked here too."""
    try:
        body = msgspec.json.decode(entry)
    except msgspec.DecodeError:
        raise EntryError("an entry is not JSON") from None
    if not isinstance(body, dict):
        raise EntryError("an entry is not a JSON object")
    if canonical_json(body) != entry:
        raise EntryError(f"entry {body.get('id')!r} is not in canonical form (keys sorted, no whitespace)")
    kind = body.get("type")
    want = {"result": {"type", "id", "record_sha256"}, "release": {"type", "id", "manifest_sha256"},
            "withdrawal": {"type", "id", "date", "reason"},
            "key_rotation": {"type", "id", "new", "old", "signatures"}}.get(kind)
    if want is None:
        raise EntryError(f"entry type {kind!r} is not one of {', '.join(TYPES)}")
    if set(body) != want or not isinstance(body["id"], str) or not body["id"]:
        raise EntryError(f"a {kind} entry needs exactly the fields {', '.join(sorted(want))}")
    if kind == "result" and not _HEX64.match(str(body["record_sha256"])):
        raise EntryError(f"result {body['id']}: record_sha256 is not 64 hex digits")
    if kind == "release" and not _HEX64.match(str(body["manifest_sha256"])):
        raise EntryError(f"release {body['id']}: manifest_sha256 is not 64 hex digits")
    if kind == "withdrawal" and (not _DATE.match(str(body["date"])) or not isinstance(body["reason"], str)):
        raise EntryError(f"withdrawal {body['id']}: date is not YYYY-MM-DD or reason is not text")
    if kind == "key_rotation":
        _check_rotation(body)
    return body


def rotation_keys(body: Mapping[str, Any]) -> tuple[bytes | None, bytes]:
    """(old raw public key or None, new raw public key) of a parsed rotation entry."""
    old = _raw_key(body["old"]) if body["old"] is not None else None
    return old, _raw_key(body["new"])


def _check_rotation(body: Mapping[str, Any]) -> None:
    old, new = rotation_keys(body)
    if body["id"] != body["new"]["key_id"]:
        raise EntryError(f"key rotation {body['id']}: its id is not the new key's id")
    signatures = body["signatures"]
    if not isinstance(signatures, dict) or set(signatures) != {"new", "old"}:
        raise EntryError(f"key rotation {body['id']}: signatures must hold 'new' and 'old'")
    message = rotation_message(old, new, body["old"]["key_id"] if old is not None else None, body["id"])
    if not _signed(new, signatures["new"], message):
        raise EntryError(f"key rotation {body['id']}: the new key's signature does not verify")
    if old is None:
        if signatures["old"] is not None:
            raise EntryError(f"key rotation {body['id']}: a first key carries no old signature")
    elif not _signed(old, signatures["old"], message):
        raise EntryError(f"key rotation {body['id']}: the old key's signature does not verify")


def _raw_key(key: Any) -> bytes:
    if not isinstance(key, dict) or set(key) != {"key_id", "public_key"}:
        raise EntryError("a rotation key needs exactly key_id and public_key")
    try:
        raw = base64.b64decode(str(key["public_key"]), validate=True)
    except (binascii.Error, ValueError):
        raise EntryError(f"key {key.get('key_id')}: public_key is not base64") from None
    if len(raw) != 32 or not names_key(key["key_id"], raw):
        raise EntryError(f"key {key.get('key_id')}: not a 32-byte Ed25519 key matching its key_id")
    return raw


def _signed(public_key: bytes, signature: Any, message: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(base64.b64decode(str(signature), validate=True),
                                                              message)
        return True
    except (InvalidSignature, ValueError, binascii.Error):
        return False


def _checked(body: dict[str, Any]) -> bytes:
    entry = canonical_json(body)
    parse_entry(entry)
    return entry


__all__ = ["ROTATION_CONTEXT", "TYPES", "EntryError", "key_body", "key_id_of", "names_key", "parse_entry", "record_sha256",
           "release_entry", "result_entry", "rotation_entry", "rotation_keys", "rotation_message", "withdrawal_entry"]
