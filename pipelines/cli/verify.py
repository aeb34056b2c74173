"""``medbench verify RUN_ID|RELEASE_ID``: is this the result (or release) medbench signed?

For a result it checks the Ed25519 signature over ``signature.signed``, that the signed string says
what the result says (``warehouse.signing.result_mismatches``), and re-hashes the predictions file
against the signed ``predictions_sha256``. For a release it checks the signature over the manifest,
that the signed string is the served manifest, and that its sha256 is ``manifest_sha256``.

Then the transparency log (``pipelines.cli.verify_log``): the inclusion proof of the result or
release against a signed checkpoint, that checkpoint's key valid at its size by the log's key
rotations, and with ``--since CHECKPOINT_FILE`` that today's log extends a checkpoint the user kept;
an edited, truncated or duplicated log makes the verdict invalid.

Where from: the server, found like every client command (``--api-url``, default
``$MEDBENCH_API_URL``, else the local server), or with ``--offline DIR`` a data directory's files
alone. Against which keys: the server's ``/v1/keys`` (offline: the data directory's keys file), or
with ``--trusted-keys FILE|FINGERPRINT`` keys the user already trusts (a saved ``/v1/keys`` answer, or
a fingerprint the key must have). A key read from the very directory being verified proves nothing
(whoever edited a result can replace ``keys.json``), so ``--offline`` without a pinned key exits 4
("valid, key not pinned") and prints the key's fingerprint and where it came from. A signature made
after its key's ``valid_until`` is invalid; a signature from before whole records were signed gets
its own verdict ("valid, legacy: 7 fields signed"), never a plain "valid". Exit codes (docs/cli.md):
0 valid, 1 invalid (or not found), 2 usage error, 3 server unreachable, 4 valid but offline without a
pinned key. Imports httpx, msgspec and cryptography only when it runs, never Dagster.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

VALID, INVALID, USAGE, NOT_PINNED = 0, 1, 2, 4
FINGERPRINT_PREFIX = "SHA256:"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify", help="check the signature of a result or release, and re-hash its predictions",
        description="Check that a result (RUN_ID) or a release (RELEASE_ID) is the one medbench signed, and "
        "re-hash a result's predictions. The keys' fingerprints: `curl $MEDBENCH_API_URL/v1/keys` (or "
        "<data>/releases/keys.json); exit 0 valid, 1 invalid, 2 usage, 3 server unreachable, 4 valid but "
        "--offline without --trusted-keys (the key was read from the directory being verified).")
    p.add_argument("id", metavar="RUN_ID|RELEASE_ID")
    p.add_argument("--api-url", default=None, metavar="URL",
                   help="medbench API to ask (default: $MEDBENCH_API_URL, else http://127.0.0.1:8000)")
    p.add_argument("--offline", type=Path, default=None, metavar="DIR",
                   help="verify from this data directory's files alone, without a server")
    p.add_argument("--trusted-keys", default=None, metavar="FILE|FINGERPRINT",
                   help="verify against keys you trust: a saved /v1/keys answer, or a key fingerprint "
                   "(SHA256:...) the signing key must have")
    p.add_argument("--since", type=Path, default=None, metavar="CHECKPOINT_FILE",
                   help="a checkpoint you kept (the `note` of GET /v1/log/checkpoint): also check that today's "
                   "transparency log extends it")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from warehouse.versions import VERSION_RE

    is_release = bool(VERSION_RE.match(args.id))
    if not is_release and not (len(args.id) == 12 and all(c in "0123456789abcdef" for c in args.id)):
        print(f"medbench verify: {args.id!r} is neither a run id (12 hex digits) nor a release id", file=sys.stderr)
        return USAGE
    pin = args.trusted_keys
    trusted = _trusted_keys(Path(pin)) if pin and not pin.startswith(FINGERPRINT_PREFIX) else None
    if trusted is False:
        return USAGE
    from pipelines.cli.verify_log import read_since

    args.since_note = read_since(args.since)
    if args.since_note is False:
        return USAGE
    if args.offline is not None:
        return _offline(args, is_release, trusted)
    return _online(args, is_release, trusted)


def _trusted_keys(path: Path) -> dict[str, dict[str, Any]] | bool:
    try:
        body = json.loads(path.read_text())
        return {k["key_id"]: _entry(k, f"pinned in {path}") for k in body["keys"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"medbench verify: --trusted-keys {path}: not a /v1/keys answer ({exc}) nor a fingerprint "
              "(SHA256:...); save one with `curl URL/v1/keys > keys.json`", file=sys.stderr)
        return False


def _keys(args: argparse.Namespace, listed: list[dict[str, Any]], source: str) -> dict[str, dict[str, Any]]:
    """key_id -> key entry (with where it came from): the listed keys, or with ``--trusted-keys
    FINGERPRINT`` only the listed key of that fingerprint (then pinned)."""
    pin = args.trusted_keys
    entries = [_entry(k, source) for k in listed]
    if pin and pin.startswith(FINGERPRINT_PREFIX):
        return {k["key_id"]: {**k, "source": f"{source}, pinned by its fingerprint"}
                for k in entries if k["fingerprint"] == pin}
    return {k["key_id"]: k for k in entries}


def _entry(key: dict[str, Any], source: str) -> dict[str, Any]:
    """A listed key with where it came from, its fingerprint computed from its public key (a listed
    ``fingerprint`` is never trusted: a forged list could pair a pinned fingerprint with another key)."""
    import base64
    import binascii

    from warehouse.signing import fingerprint_of

    try:
        fingerprint = fingerprint_of(base64.b64decode(str(key["public_key"]), validate=True))
    except (binascii.Error, ValueError):
        fingerprint = "(not a base64 public key)"
    return {**key, "fingerprint": fingerprint, "source": source}


def _online(args: argparse.Namespace, is_release: bool, trusted: dict[str, dict[str, Any]] | None) -> int:
    import msgspec

    from api.client import ApiClient, ClientError

    with ApiClient(args.api_url) as client:
        try:
            keys = trusted if trusted is not None else _keys(
                args, msgspec.to_builtins(client.keys().keys), f"the server's /v1/keys ({client.base_url})")
            from pipelines.cli import verify_log

            if is_release:
                body = client.get(f"/v1/releases/{args.id}")
                logged = verify_log.online(client, "release", args.id, keys, _release_expect(body), _signer(body),
                                           args.since_note)
                return _report(args, "release", release_problems(body, keys) + logged.problems, body, keys,
                               pinned=True, logged=logged)
            body = client.get(f"/v1/results/{args.id}")
            problems = result_problems(body, keys)
            signed_sha = _signed_sha(body)
            if signed_sha is not None:
                problems += _download_problems(client, args.id, signed_sha)
            logged = verify_log.online(client, "result", args.id, keys, {"type": "result", "id": args.id},
                                       _signer(body), args.since_note)
            return _report(args, "result", problems + logged.problems, body, keys, pinned=True,
                           withdrawn=body.get("withdrawn"), logged=logged)
        except ClientError as exc:
            if isinstance(exc.body, dict) and exc.body.get("error") == "log_unavailable":  # a release the log no
                return _report(args, "release" if is_release else "result",  # longer attests: not a network fault
                               [f"log: {exc.body.get('message')}"])
            print(f"medbench verify: {exc.message}", file=sys.stderr)
            return exc.exit_code


def _download_problems(client: Any, run_id: str, expected: str) -> list[str]:
    from api.client import ClientError, NotFound

    with tempfile.TemporaryDirectory(prefix="medbench-verify-") as tmp:
        try:
            client.download(f"/artifacts/{run_id}/predictions.parquet", Path(tmp) / "predictions.parquet", expected)
        except NotFound as exc:
            return [f"predictions: {exc.message}"]
        except ClientError as exc:  # the server itself refuses a file that is not the published one
            if isinstance(exc.body, dict) and exc.body.get("error") == "artifact_unavailable":
                return [f"predictions: {exc.message}"]
            raise
    return []


def _offline(args: argparse.Namespace, is_release: bool, trusted: dict[str, dict[str, Any]] | None) -> int:
    import msgspec

    from warehouse.keys import keys_path, public_keys, read_keys
    from medbench.layout import DataDir
    from medbench.records import decode_record
    from warehouse.releases import read_releases
    from pipelines.cli import verify_log
    from warehouse.signing import read_signature
    from warehouse.tlog.proofs import record_hash_of

    if not args.offline.is_dir():
        print(f"medbench verify: --offline {args.offline}: no such data directory", file=sys.stderr)
        return USAGE
    data = DataDir(args.offline)
    keys = trusted if trusted is not None else _keys(
        args, list(public_keys(read_keys(data)).values()), f"{keys_path(data)}, inside the directory being verified")
    pinned = args.trusted_keys is not None
    if is_release:
        found = next((r for r in read_releases(data) if r.id == args.id), None)
        if found is None:
            return _report(args, "release", [f"no release {args.id} in {data.release_log}"])
        body = msgspec.to_builtins(found)
        logged = verify_log.offline(data.root, "release", args.id, keys, _release_expect(body), _signer(body),
                                    args.since_note)
        return _report(args, "release", release_problems(body, keys) + logged.problems, body, keys, pinned,
                       logged=logged)
    try:
        stored = data.result_path(args.id).read_bytes()
        body = msgspec.to_builtins(decode_record(stored))
    except (OSError, ValueError) as exc:
        return _report(args, "result", [f"cannot read {data.result_path(args.id)}: {exc}"])
    body["signature"] = read_signature(data, args.id)
    problems = result_problems(body, keys)
    signed_sha = _signed_sha(body)
    if signed_sha is not None:
        problems += _file_problems(data.predictions_path(args.id), signed_sha)
    from warehouse.withdrawals import withdrawals

    w = withdrawals(data).get(args.id)
    logged = verify_log.offline(data.root, "result", args.id, keys,
                                {"type": "result", "id": args.id, "record_sha256": record_hash_of(stored)},
                                _signer(body), args.since_note)
    return _report(args, "result", problems + logged.problems, body, keys, pinned,
                   withdrawn={"date": str(w.date), "reason": w.reason} if w else None, logged=logged)


def _release_expect(body: dict[str, Any]) -> dict[str, str]:
    return {"type": "release", "id": str(body.get("id")), "manifest_sha256": str(body.get("manifest_sha256"))}


def _signer(body: dict[str, Any]) -> str | None:
    signature = body.get("signature")
    return signature.get("key_id") if isinstance(signature, dict) else None


def _file_problems(path: Path, expected: str) -> list[str]:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        return [f"predictions: cannot read {path}: {exc.strerror}"]
    if digest.hexdigest() != expected:
        return [f"predictions: {path} has sha256 {digest.hexdigest()}, not the signed {expected}"]
    return []


def _signed_sha(body: dict[str, Any]) -> str | None:
    """The ``predictions_sha256`` inside the signed string (the one to re-hash against), if readable."""
    try:
        return json.loads(body["signature"]["signed"])["predictions_sha256"]
    except (KeyError, TypeError, ValueError):
        return None


def _signature_problems(signature: Any, keys: dict[str, dict[str, Any]], signed_at: str | None) -> list[str]:
    """What is wrong with a signature under ``keys``: unknown key, bad Ed25519 signature, or made
    (``signed_at``) outside its key's lifetime."""
    from warehouse.signing import lifetime_problem, verify

    if not isinstance(signature, dict):
        return ["no signature: it was published without a signing key"]
    key_id = signature.get("key_id")
    if key_id not in keys:
        return [f"signature: key {key_id} is not among the keys verified against"]
    if not verify(str(keys[key_id].get("public_key")), signature):
        return [f"signature: not a valid Ed25519 signature of the signed string under key {key_id}"]
    late = lifetime_problem(signed_at, keys[key_id].get("valid_from"), keys[key_id].get("valid_until"))
    return [f"signature: {late}"] if late else []


def result_problems(body: dict[str, Any], keys: dict[str, dict[str, Any]]) -> list[str]:
    """What is wrong with a served result (its JSON, signature included) under ``keys``; [] when valid."""
    from warehouse.signing import legacy_field_count, result_mismatches, signed_body

    signature = body.get("signature")
    inner = signed_body(signature) if isinstance(signature, dict) else None
    legacy = isinstance(signature, dict) and legacy_field_count(signature) is not None
    if isinstance(signature, dict) and not legacy and (inner is None or inner.get("key_id") != signature.get("key_id")):
        return ["signature: the signed string does not name the key that signed it"]
    problems = _signature_problems(signature, keys, inner.get("signed_at") if inner and not legacy else None)
    if problems:
        return problems
    wrong = result_mismatches(signature["signed"], body)
    return [f"{name}: the result says otherwise than the signed string" for name in wrong]


def release_problems(body: dict[str, Any], keys: dict[str, dict[str, Any]]) -> list[str]:
    """What is wrong with a release (its JSON: manifest, manifest_sha256, signature) under ``keys``."""
    from warehouse.releases import manifest_bytes

    signature = body.get("signature")
    problems = _signature_problems(signature, keys, signature.get("signed_at") if isinstance(signature, dict) else None)
    if problems:
        return problems
    signed = body["signature"]["signed"]
    if signed.encode() != manifest_bytes(body.get("delta") or body.get("manifest") or {}):
        problems.append("manifest: the release's manifest (or delta) is not the signed string")
    if hashlib.sha256(signed.encode()).hexdigest() != body.get("manifest_sha256"):
        problems.append("manifest_sha256: not the sha256 of the signed manifest")
    return problems


def _report(args: argparse.Namespace, what: str, problems: list[str], body: dict[str, Any] | None = None,
            keys: dict[str, dict[str, Any]] | None = None, pinned: bool = True,
            withdrawn: dict[str, Any] | None = None, logged: Any = None) -> int:
    """Print the verdict; the exit code: 1 invalid, 4 valid under a key read from the directory
    being verified (not pinned), else 0. A legacy signature's verdict names how many fields it covers; a
    withdrawn result is still validly signed, and says so beside it (same exit code)."""
    from warehouse.signing import legacy_field_count

    signature = (body or {}).get("signature") or {}
    key = (keys or {}).get(signature.get("key_id"), {})
    legacy = legacy_field_count(signature) if what == "result" and not problems else None
    verdict = "invalid" if problems else "valid, key not pinned" if not pinned else "valid"
    if legacy is not None and not problems:
        verdict = f"valid, legacy: {legacy} fields signed" + ("" if pinned else ", key not pinned")
    code = INVALID if problems else VALID if pinned else NOT_PINNED
    if args.json:
        print(json.dumps({"id": args.id, "kind": what, "valid": not problems, "verdict": verdict, "problems": problems,
                          "legacy_fields": legacy, "key_id": signature.get("key_id"),
                          "fingerprint": key.get("fingerprint"), "key_source": key.get("source"), "pinned": pinned,
                          "withdrawn": withdrawn, "log": logged.info if logged is not None else None,
                          "log_absent": logged.absent if logged is not None else None}))
    elif problems:
        print(f"INVALID: {what} {args.id}: " + "; ".join(problems))
    else:
        demo = " (a demo key)" if str(signature.get("key_id", "")).startswith("demo-") else ""
        print(f"{verdict}: {what} {args.id} is signed by key {signature.get('key_id')}{demo}, fingerprint "
              f"{key.get('fingerprint')}, from {key.get('source')}" + ("; predictions re-hashed" if what == "result" else ""))
        for line in logged.lines() if logged is not None else []:
            print(line)
        if withdrawn:
            print(f"valid, withdrawn on {withdrawn.get('date')}: {withdrawn.get('reason')}")
        if legacy is not None:
            print(f"  only {legacy} fields are signed (a signature from before whole records were signed); the "
                  "next publish re-signs the result")
        if not pinned:
            print("  the key was read from the directory being verified, so it proves nothing by itself: compare the "
                  "fingerprint with the one the service publishes (its About page, docs/operations.md) and pass it "
                  "as --trusted-keys FINGERPRINT")
    return code
