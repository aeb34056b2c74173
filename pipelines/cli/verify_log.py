"""The transparency-log part of ``medbench verify``: the inclusion proof, the key's lifetime, ``--since``.

Why: a valid signature says medbench signed a result; only the log says it was published to
everyone in the same form, and that the key was not retired when it signed (docs/transparency-log.md
"Verifying"). For a result or a release this checks:

- the inclusion proof of its entry against a checkpoint signed by a key verified against
  (``warehouse.tlog.proofs.check_proof``); the entry names what the reader holds (a release's
  ``manifest_sha256``; offline, a result's record hash too: the API does not serve the stored
  record, so online a result's entry is checked by its run id);
- the key's lifetime against the log: the checkpoint is signed by a key the log's rotations make
  valid at its size, and the record's signing key is one the log introduced. Online, every entry up
  to the checkpoint is fetched (``/v1/log/entries``, pages of 1,000) and hashed to its root
  (``check_key_lifetime``); offline, the directory's log is audited from its first entry
  (``audit``: an edited, truncated or duplicated log is found here);
- with ``--since FILE`` (a checkpoint the user kept), that today's log extends it: a consistency
  proof (online ``/v1/log/consistency``, ``check_since``), offline the audit against it.

A server or directory with no transparency log at all (data published before it existed) is said
("not in a transparency log"), not counted as invalid, unless ``--since`` asks for the log.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from warehouse.tlog.checkpoint import Checkpoint

NO_LOG = "no transparency log yet"


class LogCheck:
    """What the log said: ``problems`` (empty when every check passed) and ``info`` (for the verdict)."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.info: dict[str, Any] | None = None
        self.absent: str | None = None

    def fail(self, text: str) -> LogCheck:
        self.problems.append(f"log: {text}")
        return self

    def lines(self) -> list[str]:
        if self.absent:
            return [f"  not in a transparency log: {self.absent}; the inclusion proof was not checked"]
        if not self.info:
            return []
        i = self.info
        out = [f"  in the transparency log: entry {i['leaf_index']} of checkpoint {i['origin']} size {i['tree_size']} "
               f"root {i['root_hash']}, signed by key {i['checkpoint_key']} (valid at that size)"]
        if i.get("since") is not None:
            out.append(f"  the log extends your checkpoint of size {i['since']} (consistency proof checked)")
        return out


def raw_keys(keys: dict[str, dict[str, Any]]) -> list[bytes]:
    out = []
    for key in keys.values():
        try:
            out.append(base64.b64decode(str(key.get("public_key")), validate=True))
        except (binascii.Error, ValueError):
            continue
    return out


def read_since(path: Path | None) -> str | None | bool:
    """The kept checkpoint's text; False (said) when it cannot be read."""
    import sys

    from warehouse.tlog.checkpoint import CheckpointError, parse_checkpoint

    if path is None:
        return None
    try:
        note = path.read_text(encoding="utf-8")
        parse_checkpoint(note)
        return note
    except (OSError, UnicodeDecodeError, CheckpointError) as exc:
        print(f"medbench verify: --since {path}: not a checkpoint ({exc}); save one with "
              "`curl URL/v1/log/checkpoint | jq -r .note > checkpoint.txt`", file=sys.stderr)
        return False


def _info(proof: dict[str, Any], checkpoint: Checkpoint, checkpoint_key: str | None) -> dict[str, Any]:
    return {"leaf_index": proof["leaf_index"], "tree_size": checkpoint.size, "root_hash": checkpoint.root.hex(),
            "origin": checkpoint.origin, "checkpoint_key": checkpoint_key, "since": None}


def _checkpoint_key(note: str, checkpoint: Checkpoint, keys: dict[str, dict[str, Any]]) -> str | None:
    from warehouse.tlog.checkpoint import signed_by

    for key_id, key in keys.items():
        raw = raw_keys({key_id: key})
        if raw and signed_by(note, checkpoint.origin, raw):
            return key_id
    return None


def online(client: Any, kind: str, entry_id: str, keys: dict[str, dict[str, Any]], expect: dict[str, str],
           signer_id: str | None, since: str | None) -> LogCheck:
    """The log checks against a server (``ApiClient``); ``Unreachable`` propagates (exit 3)."""
    from api.client import ClientError, NotFound, UsageError
    from warehouse.tlog.proofs import ProofError, check_key_lifetime, check_proof, check_since
    from warehouse.tlog.reader import PAGE_MAX

    check = LogCheck()
    route = f"/v1/{'results' if kind == 'result' else 'releases'}/{entry_id}/proof"
    try:
        proof = client.get(route)
    except NotFound as exc:
        return check.fail(f"the log's checkpoint holds no entry for {entry_id} ({exc.message})")
    except ClientError as exc:
        if not (isinstance(exc.body, dict) and exc.body.get("error") == "log_unavailable"):
            raise
        if NO_LOG in exc.message and since is None:
            check.absent = f"{client.base_url} has {NO_LOG}"
            return check
        return check.fail(exc.message.split(": ", 1)[-1])
    public = raw_keys(keys)
    try:
        checkpoint = check_proof(proof, public, expect=expect)
        entries: list[bytes] = []
        while len(entries) < checkpoint.size:
            end = min(checkpoint.size, len(entries) + PAGE_MAX)
            page = client.get("/v1/log/entries", start=len(entries), end=end)
            entries += [str(row["entry"]).encode() for row in page["entries"]]
            if not page["entries"]:
                break
        note = proof["checkpoint"]["note"]
        check_key_lifetime(entries, note, public, signer_id)
        check.info = _info(proof, checkpoint, _checkpoint_key(note, checkpoint, keys))
        if since is not None:
            from warehouse.tlog.checkpoint import parse_checkpoint

            kept = parse_checkpoint(since)
            consistency = (client.get("/v1/log/consistency", **{"from": kept.size, "to": checkpoint.size})
                           if 0 < kept.size <= checkpoint.size else {"from": kept.size, "to": checkpoint.size, "hashes": []})
            check_since(since, consistency, checkpoint, public)
            if kept.size:
                check_key_lifetime(entries, since, public)
            check.info["since"] = kept.size
    except ProofError as exc:
        return check.fail(str(exc))
    except (UsageError, NotFound) as exc:
        return check.fail(exc.message)
    except (KeyError, TypeError, ValueError) as exc:
        return check.fail(f"the server's log answers are malformed ({exc})")
    return check


def offline(root: Path, kind: str, entry_id: str, keys: dict[str, dict[str, Any]], expect: dict[str, str],
            signer_id: str | None, since: str | None) -> LogCheck:
    """The log checks against a data directory's ``log/`` folder."""
    from warehouse.tlog.audit import LogIntegrityError, audit
    from warehouse.tlog.proofs import ProofError, check_proof, check_since, knows_key
    from warehouse.tlog.reader import LogView
    from warehouse.tlog.store import LogStore

    check = LogCheck()
    store = LogStore.of_data(root)
    if not store.entries_path.exists() and store.read_checkpoint() is None:
        if since is None:
            check.absent = f"{root} has {NO_LOG}"
            return check
        return check.fail(f"{root} has {NO_LOG} to check --since against")
    try:
        state = audit(store, kept=since, kept_name="checkpoint given with --since")
    except LogIntegrityError as exc:
        return check.fail(str(exc))
    view = LogView(store, state)
    proof = view.proof_body(kind, entry_id) if state.checkpoint is not None else None
    if proof is None:
        return check.fail(f"no entry of the log's checkpoint holds {kind} {entry_id}: it was never logged, or the log "
                          "was truncated")
    public = raw_keys(keys)
    try:
        checkpoint = check_proof(proof, public, expect=expect)
        if signer_id is not None and not knows_key(state.keys, signer_id):
            raise ProofError(f"key {signer_id} is not a key of the transparency log (no key rotation introduces it)")
        check.info = _info(proof, checkpoint, _checkpoint_key(checkpoint.note, checkpoint, keys))
        if since is not None:
            from warehouse.tlog.checkpoint import parse_checkpoint

            kept = parse_checkpoint(since)
            if kept.size:
                check_since(since, view.consistency_body(kept.size, None), checkpoint, public)
            check.info["since"] = kept.size
    except ProofError as exc:
        return check.fail(str(exc))
    return check


__all__ = ["LogCheck", "offline", "online", "raw_keys", "read_since"]
