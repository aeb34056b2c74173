"""Ed25519 signatures over a whole result record, and over a release's manifest.

Why: a citation is only worth what a reader can check. A result's signature covers its record as
stored in ``result.json`` (``predictions_sha256`` included), with the time it was signed
(``signed_at``) and the signing key's id (``key_id``) inside the signed bytes, so no published field
can be changed, and no signature replayed onto another run or key, unnoticed. Left out, and only
these (``LEFT_OUT``; docs/api.md "Signatures" says why): the host-dependent fields (``url``,
``predictions_url``, ``bibtex``), which differ on every mirror; the field derived at each publish
(``versus_baseline``); the status fields (``status``, ``withdrawn``, ``supersedes``,
``superseded_by``), which the release log attests. ``generation_key`` (``NOT_PUBLISHED``) is kept in
``result.json`` for the pipeline only and is published nowhere: it is a hash of unredacted settings.

The signed string is the project's canonical JSON (``warehouse.releases.canonical_json``: keys
sorted, no whitespace, UTF-8, msgspec's number form) and is published beside the signature
(``{key_id, value, signed, signed_at}``), so a verifier needs no canonicaliser of its own: it checks
the Ed25519 signature over ``signed``, then that ``signed`` says what the result says
(``result_mismatches``). docs/api.md "Checking a signature without medbench" is the recipe.

Signatures made before whole records were signed (``LEGACY_FIELDS``, no ``signed_at``) still check,
but get their own verdict (``legacy_field_count``), never a plain "valid"; the next publish re-signs
them (``sign_results``). A key signs only inside its lifetime: a signature whose ``signed_at`` lies
after its key's ``valid_until`` (or before ``valid_from``) is invalid (``lifetime_problem``).

Signing happens when a result is published (``sign_results``, called by the publisher with the key
from ``warehouse.keys``); the signature is kept in ``artifacts/<run_id>/signature.json`` next to
the result and copied into the warehouse's ``results.signature`` column. The API only serves it.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from medbench.files import PUBLIC_FILE, atomic_path, read_regular
from medbench.layout import DataDir
from medbench.records import CONTAMINATION_FLAG, ResultRecord, contamination_of
from warehouse.releases import canonical_json

ALGORITHM = "ed25519"
# the fields of a result a signature leaves out (docs/api.md "Signatures" says why)
LEFT_OUT = ("url", "predictions_url", "bibtex", "versus_baseline", "status", "withdrawn", "supersedes",
            "superseded_by")
NOT_PUBLISHED = ("generation_key",)  # kept in result.json for the pipeline, published nowhere
SIGNING_FIELDS = ("signed_at", "key_id")  # added to the record inside the signed bytes
# what a signature covered before whole records were signed
LEGACY_FIELDS = ("run_id", "task", "model", "metrics", "versions", "config", "predictions_sha256")
NOT_SERVED = ("created_at",)  # signed, but the API does not serve it (checked offline only)


def published_record(record: ResultRecord | Mapping[str, Any]) -> dict[str, Any]:
    """The record as medbench publishes it: every field but ``NOT_PUBLISHED`` (the DuckDB ``record``)."""
    body = msgspec.to_builtins(record) if isinstance(record, ResultRecord) else dict(record)
    return {k: v for k, v in body.items() if k not in NOT_PUBLISHED}


def signed_fields(record: ResultRecord | Mapping[str, Any]) -> dict[str, Any]:
    """The part of a record a signature covers: the published record less ``LEFT_OUT``."""
    return {k: v for k, v in published_record(record).items() if k not in LEFT_OUT}


def result_signed_bytes(record: ResultRecord | Mapping[str, Any], signed_at: str, key_id: str) -> bytes:
    """The exact bytes a result's signature is taken over: canonical JSON of ``signed_fields`` plus
    ``signed_at`` (ISO 8601 UTC, ``YYYY-MM-DDTHH:MM:SSZ``) and ``key_id``."""
    return canonical_json({**signed_fields(record), "signed_at": signed_at, "key_id": key_id})


def utc_stamp(when: dt.datetime | None = None) -> str:
    """``signed_at``'s form: UTC to the second, ``Z``-suffixed."""
    when = (when or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


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
    """A private Ed25519 key and the names of its public half. Only the publisher ever holds one.

    ``sign_bytes(message) -> signature`` is the primitive (the transparency log signs its
    checkpoints with it); ``sign(message)`` wraps it as the published ``{key_id, value, signed,
    signed_at}`` object. A demo key's id starts with ``demo-`` (``warehouse.keys``)."""

    def __init__(self, private: Ed25519PrivateKey, source: str, demo: bool = False):
        self._private = private
        self.source = source  # the file it was read from (shown to the maintainer, never published)
        self.demo = demo
        self.public_key = raw_public_key(private.public_key())
        self.key_id = ("demo-" if demo else "") + key_id_of(self.public_key)
        self.fingerprint = fingerprint_of(self.public_key)

    def sign_bytes(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``message``."""
        return self._private.sign(message)

    def sign(self, message: bytes, signed_at: str | None = None) -> dict[str, str]:
        """``{key_id, value, signed, signed_at}`` for ``message`` (UTF-8 text: a canonical JSON document)."""
        value = base64.b64encode(self.sign_bytes(message)).decode()
        return {"key_id": self.key_id, "value": value, "signed": message.decode(), "signed_at": signed_at or utc_stamp()}

    def sign_result(self, record: ResultRecord, when: dt.datetime | None = None) -> dict[str, str]:
        """The signature of a whole result record (``result_signed_bytes``), made now (or ``when``)."""
        stamp = utc_stamp(when)
        return self.sign(result_signed_bytes(record, stamp, self.key_id), stamp)


def verify(public_key_b64: str, signature: Mapping[str, Any]) -> bool:
    """Whether ``signature['value']`` is a valid Ed25519 signature of ``signature['signed']``."""
    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key_b64, validate=True))
        key.verify(base64.b64decode(str(signature["value"]), validate=True), str(signature["signed"]).encode())
        return True
    except (InvalidSignature, ValueError, KeyError, TypeError):
        return False


def lifetime_problem(signed_at: str | None, valid_from: Any, valid_until: Any) -> str | None:
    """Why a signature made at ``signed_at`` falls outside its key's lifetime (dates, inclusive), or None.

    ``valid_from``/``valid_until`` are dates or ISO date strings (a /v1/keys entry); ``valid_until``
    None: the key in use."""
    if signed_at is None:
        return None
    try:
        when = dt.datetime.fromisoformat(signed_at.replace("Z", "+00:00")).astimezone(dt.timezone.utc).date()
    except (ValueError, AttributeError):
        return f"signed_at {signed_at!r} is not an ISO 8601 time"
    start, end = (dt.date.fromisoformat(v) if isinstance(v, str) else v for v in (valid_from, valid_until))
    if end is not None and when > end:
        return f"signed on {when}, after its key's valid_until {end}"
    if start is not None and when < start:
        return f"signed on {when}, before its key's valid_from {start}"
    return None


def signed_body(signature: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON object a signature's ``signed`` string holds, or None when it is not one."""
    try:
        body = msgspec.json.decode(str(signature["signed"]))
    except (msgspec.DecodeError, KeyError, TypeError):
        return None
    return body if isinstance(body, dict) else None


def legacy_field_count(signature: Mapping[str, Any]) -> int | None:
    """How many fields a signature from before whole records were signed covers (7), or None for a
    signature of the current scheme (its signed string holds ``signed_at`` and ``key_id``)."""
    body = signed_body(signature)
    if body is None or all(name in body for name in SIGNING_FIELDS):
        return None
    return len(body)


def signature_path(data: DataDir, run_id: str):
    return data.run_dir(run_id) / "signature.json"


def read_signature(data: DataDir, run_id: str) -> dict[str, Any] | None:
    """The signature kept beside a result, or None when it has none (published before signing)."""
    try:
        found = msgspec.json.decode(read_regular(signature_path(data, run_id)))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def still_signs(kept: Mapping[str, Any] | None, record: ResultRecord, key_ids: set[str]) -> bool:
    """Whether a kept signature is of the current scheme, under a key in ``key_ids``, over exactly
    ``record``'s fields as they are now."""
    if kept is None or kept.get("key_id") not in key_ids:
        return False
    body = signed_body(kept)
    if body is None or legacy_field_count(kept) is not None or body.get("key_id") != kept.get("key_id"):
        return False
    expected = result_signed_bytes(record, str(body.get("signed_at")), str(kept["key_id"]))
    return str(kept.get("signed", "")).encode() == expected and kept.get("signed_at") == body.get("signed_at")


def sign_results(data: DataDir, results: Sequence[ResultRecord], key: SigningKey,
                 known_key_ids: set[str], when: dt.datetime | None = None) -> dict[str, dict[str, Any]]:
    """run_id -> signature of every result. A result keeps the signature it has when that still signs
    its current record under a key in ``known_key_ids`` (``still_signs``); any other (a legacy one,
    a changed record, an unknown key) is signed now with ``key`` and kept beside it (atomically).
    Re-signing changes no run id: the id is not taken over the signature."""
    signatures = {}
    for r in results:
        kept = read_signature(data, r.run_id)
        if not still_signs(kept, r, known_key_ids):
            kept = key.sign_result(r, when)
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
    return (type(signed) is bool) == (type(served) is bool) and signed == served


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _covers(want: Any, got: Any) -> bool:
    """A served object that may carry more keys than the signed one (the API adds to a model and a
    metric), every signed key equal; a metric signed without an interval method (a record from
    before methods were recorded) is served with its kind's, and one signed with a null
    ``replicates_kept`` (before it was always an int) with its int (``records.replicates_published``)."""
    if not isinstance(want, dict) or not isinstance(got, dict):
        return _same(want, got)
    return all(name in got and (_same(value, got[name]) or name == "method" and value is None
                                or _legacy_count(name, value, got[name]))
               for name, value in want.items())


def _legacy_count(name: str, signed: Any, served: Any) -> bool:
    return name == "replicates_kept" and signed is None and type(served) is int


def _covers_all(want: Any, got: Any) -> bool:
    return (isinstance(want, list) and isinstance(got, list) and len(want) == len(got)
            and all(_covers(w, g) for w, g in zip(want, got)))


def _grouped(want: Any, got: Any, inner: str) -> bool:
    """Subgroups / breakdowns: {field: [{group, n, ..., metric(s)}]}, their metrics compared with ``_covers``."""
    if not isinstance(want, dict) or not isinstance(got, dict) or want.keys() != got.keys():
        return False
    for name in want:
        rows, served = want[name], got[name]
        if not isinstance(rows, list) or not isinstance(served, list) or len(rows) != len(served):
            return False
        for w, g in zip(rows, served):
            if not isinstance(w, dict) or not isinstance(g, dict) or set(w) - set(g):
                return False
            for key, value in w.items():
                ok = (_covers_all(value, g[key]) if inner == "metrics" and key == "metrics"
                      else _covers(value, g[key]) if inner == "metric" and key == "metric"
                      else _same(value, g[key]) or _legacy_count(key, value, g[key]))
                if not ok:
                    return False
    return True


def _served_contamination(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the API serves as the contamination fields of a signed record written before statuses."""
    try:
        record = msgspec.convert({k: v for k, v in body.items() if k not in SIGNING_FIELDS}, ResultRecord)
    except msgspec.ValidationError:
        return None
    status, basis = contamination_of(record)
    return {"contamination": CONTAMINATION_FLAG[status], "contamination_status": status, "contamination_basis": basis}


def _sample(sample: Any) -> list[dict[str, str]] | None:
    """A choice result's unparsed sample (kept in ``extras``) as the API serves it (``api.render.unparsed``)."""
    if not isinstance(sample, list):
        return None
    return [{"instance_id": str(u.get("instance_id")), "output": str(u.get("output"))} if isinstance(u, dict) else u
            for u in sample]


def result_mismatches(signed: str, served: Mapping[str, Any]) -> list[str]:
    """The signed fields whose served value differs from the signed one (empty: they agree).

    ``served`` is a Result as JSON: the API's answer, or a ``result.json`` (as its record decodes).
    Every signed field must be served (``NOT_SERVED`` ones only compared where present); the API's
    derived views are compared with what they derive from: ``metric`` is the first of ``metrics``,
    ``unparsed_sample`` comes from ``extras``, and a record written before contamination statuses
    is served with the status its flag maps to (the flag is served as the status implies)."""
    try:
        body = msgspec.json.decode(signed)
    except msgspec.DecodeError:
        return ["signed"]
    if not isinstance(body, dict):
        return ["signed"]
    legacy = legacy_field_count({"signed": signed}) is not None
    if legacy and set(body) != set(LEGACY_FIELDS):
        return ["signed"]
    wrong = []
    derived = None if legacy else _served_contamination(body)
    for name in sorted(body):
        if name in SIGNING_FIELDS or name in NOT_SERVED and name not in served:
            continue
        want = body[name]
        if name not in served:
            wrong.append(name)
            continue
        got = served[name]
        if name == "model":
            ok = _covers(want, got)
        elif name == "metrics":
            ok = _covers_all(want, got)
        elif name in ("subgroups", "breakdowns"):
            ok = _grouped(want, got, "metrics" if name == "subgroups" else "metric")
        elif name == "versions" and isinstance(want, dict) and isinstance(got, dict) and "plugins" not in want:
            # the record leaves ``versions.plugins`` out while it is empty (built-in code only, which keeps
            # every built-in result's bytes); the API serves that as ``plugins: []``
            ok = got.get("plugins", []) == [] and _same(want, {k: v for k, v in got.items() if k != "plugins"})
        elif name == "extras" and "unparsed_sample" in served:  # the API serves the sample as its own field
            sample = want.get("unparsed_sample") if isinstance(want, dict) else None
            rest = {k: v for k, v in want.items() if k != "unparsed_sample"} if isinstance(want, dict) else want
            ok = _same(rest, got) and _same(_sample(sample), served["unparsed_sample"])
        else:
            ok = _same(want, got) or derived is not None and name in derived and _same(derived[name], got)
        if not ok:
            wrong.append(name)
    if not legacy and "metric" in served:  # the API's primary metric is the first signed one
        metrics = body.get("metrics")
        if not isinstance(metrics, list) or not metrics or not _covers(metrics[0], served["metric"]):
            wrong.append("metric")
    return wrong


__all__ = ["ALGORITHM", "LEFT_OUT", "LEGACY_FIELDS", "NOT_PUBLISHED", "NOT_SERVED", "SIGNING_FIELDS", "SigningKey",
           "fingerprint_of", "key_id_of", "legacy_field_count", "lifetime_problem", "published_record",
           "read_signature", "result_mismatches", "result_signed_bytes", "sign_results", "signature_path",
           "signed_body", "signed_fields", "still_signs", "utc_stamp", "verify"]
