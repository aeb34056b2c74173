"""Ed25519 signatures over what never changes about a result, and over a release's manifest.

Why: nobody could show that a number, or a predictions file, is the one medbench published. A
result's signature covers exactly the fields that never change for its run id (``SIGNED_RESULT_FIELDS``:
run_id, task, model, metrics, versions, config, ``predictions_sha256``), as canonical JSON (keys
sorted, no whitespace: ``warehouse.releases.canonical_json``, the form the warehouse hashes content
with). Its status (withdrawn, superseded) and its self-links (url, predictions_url, BibTeX, which
name a hostname) are left out, so a withdrawal or another hostname never breaks a signature; status
changes are attested by the signed release manifests instead. The exact signed string is published
beside the signature (``{key_id, value, signed}``), so a verifier needs no canonicaliser of its own:
it checks the signature over ``signed``, then that ``signed`` says what the result says.

Signing happens when a result is published (``sign_results``, called by the publisher with the key
from ``warehouse.keys``); the signature is kept in ``artifacts/<run_id>/signature.json`` next to
the result and copied into the warehouse's ``results.signature`` column. The API only serves it; it
never holds the private key. A result keeps the signature it got first for as long as the key that
made it is listed in the keys file, so a key rotation leaves old results verifiable under their old key.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from warehouse.files import PUBLIC_FILE, atomic_path, read_regular
from warehouse.layout import DataDir
from warehouse.records import ResultRecord
from warehouse.releases import canonical_json

ALGORITHM = "ed25519"
SIGNED_RESULT_FIELDS = ("run_id", "task", "model", "metrics", "versions", "config", "predictions_sha256")


def result_signed_string(record: ResultRecord) -> str:
    """The exact string a result's signature is taken over: canonical JSON of its unchanging fields."""
    body = msgspec.to_builtins(record)
    return canonical_json({name: body[name] for name in SIGNED_RESULT_FIELDS}).decode()


def raw_public_key(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id_of(public_key: bytes) -> str:
    """A short stable name of a public key: the first 16 hex digits of the sha256 of its 32 raw bytes."""
    return hashlib.sha256(public_key).hexdigest()[:16]


def fingerprint_of(public_key: bytes) -> str:
    """The fingerprint people compare: ``SHA256:`` and the unpadded base64 of the raw key's sha256
    (the form ``ssh-keygen -l`` prints)."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(public_key).digest()).decode().rstrip("=")


class SigningKey:
    """A private Ed25519 key and the names of its public half. Only the publisher ever holds one."""

    def __init__(self, private: Ed25519PrivateKey, source: str):
        self._private = private
        self.source = source  # the file it was read from (shown to the maintainer, never published)
        self.public_key = raw_public_key(private.public_key())
        self.key_id = key_id_of(self.public_key)
        self.fingerprint = fingerprint_of(self.public_key)

    def sign(self, message: bytes) -> dict[str, str]:
        """``{key_id, value, signed}`` for ``message`` (UTF-8 text: a canonical JSON document)."""
        value = base64.b64encode(self._private.sign(message)).decode()
        return {"key_id": self.key_id, "value": value, "signed": message.decode()}


def verify(public_key_b64: str, signature: Mapping[str, Any]) -> bool:
    """Whether ``signature['value']`` is a valid Ed25519 signature of ``signature['signed']``."""
    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key_b64, validate=True))
        key.verify(base64.b64decode(str(signature["value"]), validate=True), str(signature["signed"]).encode())
        return True
    except (InvalidSignature, ValueError, KeyError, TypeError):
        return False


def signature_path(data: DataDir, run_id: str):
    return data.run_dir(run_id) / "signature.json"


def read_signature(data: DataDir, run_id: str) -> dict[str, Any] | None:
    """The signature kept beside a result, or None when it has none (published before signing)."""
    try:
        found = msgspec.json.decode(read_regular(signature_path(data, run_id)))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def sign_results(data: DataDir, results: Sequence[ResultRecord], key: SigningKey,
                 known_key_ids: set[str]) -> dict[str, dict[str, Any]]:
    """run_id -> signature of every result. A result keeps the signature it has when that still signs
    its current fields under a key in ``known_key_ids``; any other is signed now with ``key`` and kept
    beside it (written atomically)."""
    signatures = {}
    for r in results:
        signed = result_signed_string(r)
        kept = read_signature(data, r.run_id)
        if kept is None or kept.get("signed") != signed or kept.get("key_id") not in known_key_ids:
            kept = key.sign(signed.encode())
            with atomic_path(signature_path(data, r.run_id), mode=PUBLIC_FILE) as tmp:
                tmp.write_bytes(msgspec.json.encode(kept))
        signatures[r.run_id] = kept
    return signatures


def _same(signed: Any, served: Any) -> bool:
    """JSON values equal, floats by value (a NaN is published as null)."""
    if isinstance(signed, float) or isinstance(served, float):
        if signed is None or served is None:
            return signed is None and served is None or _nan(signed) or _nan(served)
        return isinstance(signed, (int, float)) and isinstance(served, (int, float)) and float(signed) == float(served)
    if isinstance(signed, dict) and isinstance(served, dict):
        return signed.keys() == served.keys() and all(_same(signed[k], served[k]) for k in signed)
    if isinstance(signed, list) and isinstance(served, list):
        return len(signed) == len(served) and all(_same(a, b) for a, b in zip(signed, served))
    return signed == served


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def result_mismatches(signed: str, served: Mapping[str, Any]) -> list[str]:
    """The signed fields whose served value differs from the signed one (empty: they agree).

    ``served`` is a Result as JSON (the API's answer, or a result.json). Served objects may carry
    fields the signed ones lack (the API adds to a model and a metric); a metric signed without an
    interval method (a record from before methods were recorded) is served with its kind's."""
    try:
        body = msgspec.json.decode(signed)
    except msgspec.DecodeError:
        return ["signed"]
    if not isinstance(body, dict) or set(body) != set(SIGNED_RESULT_FIELDS):
        return ["signed"]
    wrong = []
    for name in SIGNED_RESULT_FIELDS:
        want, got = body[name], served.get(name)
        if name == "model" and isinstance(got, dict) and isinstance(want, dict):
            got = {k: got.get(k) for k in want}
        if name == "metrics" and isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
            got = [{k: (w[k] if k == "method" and w[k] is None else g.get(k)) for k in w}
                   if isinstance(g, dict) and isinstance(w, dict) else g for g, w in zip(got, want)]
        if not _same(want, got):
            wrong.append(name)
    return wrong


__all__ = ["ALGORITHM", "SIGNED_RESULT_FIELDS", "SigningKey", "fingerprint_of", "key_id_of", "read_signature",
           "result_mismatches", "result_signed_string", "sign_results", "signature_path", "verify"]
