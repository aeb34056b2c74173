"""``medbench verify RUN_ID|RELEASE_ID``: is this the result (or release) medbench signed?

For a result it checks the Ed25519 signature over ``signature.signed``, that the signed string says
what the result says (``warehouse.signing.result_mismatches``), and re-hashes the predictions file
against the signed ``predictions_sha256``. For a release it checks the signature over the manifest,
that the signed string is the served manifest, and that its sha256 is ``manifest_sha256``.

Where from: the server, found like every client command (``--api-url``, default
``$MEDBENCH_API_URL``, else the local server), or with ``--offline DIR`` a data directory's files
alone. Against which keys: the server's ``/v1/keys`` (offline: the data directory's keys file), or
with ``--trusted-keys FILE`` keys the user already trusts (a saved ``/v1/keys`` answer). Exit codes
(CONTRACT.md): 0 valid, 1 invalid (or not found), 2 usage error, 3 server unreachable. Imports
httpx, msgspec and cryptography only when it runs, never Dagster.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

VALID, INVALID, USAGE = 0, 1, 2


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify", help="check the signature of a result or release, and re-hash its predictions",
        description="Check that a result (RUN_ID) or a release (RELEASE_ID) is the one medbench signed, and "
        "re-hash a result's predictions. The keys' fingerprints: `curl $MEDBENCH_API_URL/v1/keys` (or "
        "<data>/releases/keys.json); exit 0 valid, 1 invalid, 3 server unreachable.")
    p.add_argument("id", metavar="RUN_ID|RELEASE_ID")
    p.add_argument("--api-url", default=None, metavar="URL",
                   help="medbench API to ask (default: $MEDBENCH_API_URL, else http://127.0.0.1:8000)")
    p.add_argument("--offline", type=Path, default=None, metavar="DIR",
                   help="verify from this data directory's files alone, without a server")
    p.add_argument("--trusted-keys", type=Path, default=None, metavar="FILE",
                   help="verify against these keys (a saved /v1/keys answer) instead of the server's")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from warehouse.versions import VERSION_RE

    is_release = bool(VERSION_RE.match(args.id))
    if not is_release and not (len(args.id) == 12 and all(c in "0123456789abcdef" for c in args.id)):
        print(f"medbench verify: {args.id!r} is neither a run id (12 hex digits) nor a release id", file=sys.stderr)
        return USAGE
    trusted = _trusted_keys(args.trusted_keys) if args.trusted_keys else None
    if trusted is False:
        return USAGE
    if args.offline is not None:
        return _offline(args, is_release, trusted)
    return _online(args, is_release, trusted)


def _trusted_keys(path: Path) -> dict[str, str] | bool:
    try:
        body = json.loads(path.read_text())
        return {k["key_id"]: k["public_key"] for k in body["keys"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"medbench verify: --trusted-keys {path}: not a /v1/keys answer ({exc}); save one with "
              "`curl URL/v1/keys > keys.json`", file=sys.stderr)
        return False


def _online(args: argparse.Namespace, is_release: bool, trusted: dict[str, str] | None) -> int:
    from api.client import ApiClient, ClientError

    with ApiClient(args.api_url) as client:
        try:
            keys = trusted if trusted is not None else {k.key_id: k.public_key for k in client.keys().keys}
            if is_release:
                body = client.get(f"/v1/releases/{args.id}")
                return _report(args, "release", release_problems(body, keys))
            body = client.get(f"/v1/results/{args.id}")
            problems = result_problems(body, keys)
            signed_sha = _signed_sha(body)
            if signed_sha is not None:
                problems += _download_problems(client, args.id, signed_sha)
            return _report(args, "result", problems, body.get("withdrawn"))
        except ClientError as exc:
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


def _offline(args: argparse.Namespace, is_release: bool, trusted: dict[str, str] | None) -> int:
    import msgspec

    from warehouse.keys import public_keys, read_keys
    from warehouse.layout import DataDir
    from warehouse.releases import read_releases
    from warehouse.signing import read_signature

    if not args.offline.is_dir():
        print(f"medbench verify: --offline {args.offline}: no such data directory", file=sys.stderr)
        return USAGE
    data = DataDir(args.offline)
    keys = trusted if trusted is not None else public_keys(read_keys(data))
    if is_release:
        found = next((r for r in read_releases(data) if r.id == args.id), None)
        if found is None:
            return _report(args, "release", [f"no release {args.id} in {data.release_log}"])
        return _report(args, "release", release_problems(msgspec.to_builtins(found), keys))
    try:
        body = msgspec.json.decode(data.result_path(args.id).read_bytes())
    except (OSError, ValueError) as exc:
        return _report(args, "result", [f"cannot read {data.result_path(args.id)}: {exc}"])
    body["signature"] = read_signature(data, args.id)
    problems = result_problems(body, keys)
    signed_sha = _signed_sha(body)
    if signed_sha is not None:
        problems += _file_problems(data.predictions_path(args.id), signed_sha)
    from warehouse.withdrawals import withdrawals

    w = withdrawals(data).get(args.id)
    return _report(args, "result", problems, {"date": str(w.date), "reason": w.reason} if w else None)


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


def _signature_problems(signature: Any, keys: dict[str, str]) -> list[str]:
    from warehouse.signing import verify

    if not isinstance(signature, dict):
        return ["no signature: it was published without a signing key"]
    key_id = signature.get("key_id")
    if key_id not in keys:
        return [f"signature: key {key_id} is not among the keys verified against"]
    if not verify(keys[key_id], signature):
        return [f"signature: not a valid Ed25519 signature of the signed string under key {key_id}"]
    return []


def result_problems(body: dict[str, Any], keys: dict[str, str]) -> list[str]:
    """What is wrong with a served result (its JSON, signature included) under ``keys``; [] when valid."""
    from warehouse.signing import result_mismatches

    problems = _signature_problems(body.get("signature"), keys)
    if problems:
        return problems
    wrong = result_mismatches(body["signature"]["signed"], body)
    return [f"{name}: the result says otherwise than the signed string" for name in wrong]


def release_problems(body: dict[str, Any], keys: dict[str, str]) -> list[str]:
    """What is wrong with a release (its JSON: manifest, manifest_sha256, signature) under ``keys``."""
    from warehouse.releases import manifest_bytes

    problems = _signature_problems(body.get("signature"), keys)
    if problems:
        return problems
    signed = body["signature"]["signed"]
    if signed.encode() != manifest_bytes(body.get("manifest") or {}):
        problems.append("manifest: the release's manifest is not the signed string")
    if hashlib.sha256(signed.encode()).hexdigest() != body.get("manifest_sha256"):
        problems.append("manifest_sha256: not the sha256 of the signed manifest")
    return problems


def _report(args: argparse.Namespace, what: str, problems: list[str], withdrawn: dict[str, Any] | None = None) -> int:
    """The verdict; a withdrawn result is still validly signed, and says so beside it (same exit code)."""
    if args.json:
        print(json.dumps({"id": args.id, "kind": what, "valid": not problems, "problems": problems,
                          "withdrawn": withdrawn}))
    elif problems:
        print(f"INVALID: {what} {args.id}: " + "; ".join(problems))
    else:
        print(f"valid: {what} {args.id} is signed by medbench" + ("; predictions re-hashed" if what == "result" else ""))
        if withdrawn:
            print(f"valid, withdrawn on {withdrawn.get('date')}: {withdrawn.get('reason')}")
    return INVALID if problems else VALID
