"""Each publish writes to the transparency log: before, the log and the release log are verified and
withdrawals restored from the log; after, every result, withdrawal and release is an entry.

Why: the release log could be edited, truncated or given a duplicate id unnoticed, and a withdrawal
was undone by deleting a line of ``withdrawals.jsonl`` (docs/transparency-log.md "Publishing").
``begin`` runs before anything is published and refuses (``LogIntegrityError``, one line) when:

- the log does not extend the checkpoint the publisher kept beside its key (``publisher``);
- ``releases.jsonl`` does not verify: a line that does not decode, a duplicated release id, a
  ``previous`` that does not name the release before, a ``manifest_sha256`` that is not its
  manifest's; or it disagrees with the log: a logged release missing (truncated, deleted) or with
  another manifest hash (edited). The first publish after an upgrade checks the whole existing
  chain this way before the first tree is built from it.

Withdrawals are derived from the log: a withdrawal entry whose line is missing from
``withdrawals.jsonl`` is written back (and said), so the result stays withdrawn. ``record`` then
appends what the publish made, in order: results (by record hash), withdrawals, releases not yet
logged; and signs a checkpoint with the publisher's key (through ``signer.from_signing_key``).

A new signing key takes over the log by a rotation entry both keys sign: the publish that first
uses it names the old key's PEM file in ``MEDBENCH_LOG_PREVIOUS_KEY``; without it, it is refused.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from medbench.layout import DataDir
from warehouse.releases import ReleaseRecord, manifest_bytes, releases_except
from warehouse.tlog.audit import LogIntegrityError, LogState
from warehouse.tlog.checkpoint import Checkpoint, origin_for
from warehouse.tlog.entries import record_sha256, release_entry, result_entry, withdrawal_entry
from warehouse.tlog.publisher import append, is_active, kept_checkpoint_path, read_kept, rotate, verify_for_append
from warehouse.tlog.signer import from_signing_key, load_note_signer
from warehouse.tlog.store import LogStore
from warehouse.withdrawals import Withdrawal, withdrawals

Log = Callable[[str], None]
PREVIOUS_KEY_ENV = "MEDBENCH_LOG_PREVIOUS_KEY"


class LogPublication:
    """The log's part in one publish: ``begin`` checks, ``record`` appends and signs."""

    def __init__(self, data: DataDir, key: Any, log: Log):
        self.data, self.log = data, log
        self.store = LogStore.of_data(data.root)
        self.signer = from_signing_key(key)
        self.origin = origin_for(data.demo_or_real())
        self.kept = kept_checkpoint_path(data.root, getattr(key, "source", None))
        self.state: LogState | None = None

    def check(self) -> LogState:
        if read_kept(self.kept) is None and self.store.size():
            self.log(f"no kept checkpoint of this data directory's transparency log at {self.kept} (first publish "
                     "from this path, or it was removed): keeping one from now on")
        state = verify_for_append(self.store, self.origin, self.kept)
        if state.active_key is not None and not is_active(state, self.signer):
            self._rotate(state)
            state = verify_for_append(self.store, self.origin, self.kept)
        check_release_chain(self.data, self.store, state)
        for line in restore_withdrawals(self.data, self.store, state):
            self.log(line)
        self.state = state
        return state

    def _rotate(self, state: LogState) -> None:
        """The signing key changed: the log's key hands over, both signing the rotation entry."""
        active = state.active_key
        previous = os.environ.get(PREVIOUS_KEY_ENV)
        if not previous:
            raise LogIntegrityError(f"the transparency log's key is {active}, not this publish's signing key "
                                    f"{self.signer.key_id}: set {PREVIOUS_KEY_ENV} to the old key's "
                                    "PEM file for this publish, so that both keys sign the rotation "
                                    "(docs/transparency-log.md)")
        old = load_note_signer(Path(previous).expanduser())
        if not is_active(state, old):
            raise LogIntegrityError(f"{PREVIOUS_KEY_ENV}={previous} is key {old.key_id}, not the "
                                    f"transparency log's key {active}")
        checkpoint = rotate(self.store, old, self.signer, self.origin, self.kept)
        self.log(f"transparency log: key {active} handed over to {self.signer.key_id} at entry "
                 f"{checkpoint.size - 1}")

    def record(self, results: list[Any], withdrawn: dict[str, dict[str, str]]) -> Checkpoint:
        entries = [result_entry(r.run_id, record_sha256(r)) for r in results]
        entries += [withdrawal_entry(run_id, str(w["date"]), str(w["reason"]))
                    for run_id, w in sorted(withdrawn.items())]
        # the releases the log did not hold when the publish began (only their lines are read)
        logged = self.state.positions if self.state is not None else {}
        entries += [release_entry(r.id, r.manifest_sha256)
                    for r in releases_except(self.data, lambda release_id: ("release", release_id) in logged)]
        checkpoint = append(self.store, entries, self.signer, self.origin, self.kept)
        self.log(f"transparency log: {checkpoint.size} entries, checkpoint signed and kept at {self.kept}")
        return checkpoint


def begin(data: DataDir, key: Any, log: Log) -> LogPublication:
    """The log verified for this publish (see the module docstring); ``LogIntegrityError`` if not."""
    publication = LogPublication(data, key, log)
    publication.check()
    return publication


def check_release_chain(data: DataDir, store: LogStore, state: LogState) -> list[ReleaseRecord]:
    """``releases.jsonl`` verified on its own and against the log's release entries."""
    records = _read_release_lines(data)
    seen: dict[str, int] = {}
    previous = None
    for number, record in enumerate(records, start=1):
        where = f"line {number} of {data.release_log}"
        if record.id in seen:
            raise LogIntegrityError(f"{where} repeats release {record.id} (line {seen[record.id]}): the release log "
                                    "was edited; restore it from a backup (docs/transparency-log.md)")
        seen[record.id] = number
        if record.previous != previous:
            raise LogIntegrityError(f"{where}: release {record.id} follows {record.previous}, not {previous}: the "
                                    "release log was truncated or edited; restore it from a backup")
        if (hashlib.sha256(manifest_bytes(record.manifest)).hexdigest() != record.manifest_sha256
                or record.manifest.get("release") != record.id):
            raise LogIntegrityError(f"{where}: release {record.id}'s manifest does not hash to its manifest_sha256: "
                                    "the release log was edited; restore it from a backup")
        previous = record.id
    by_id = {r.id: r for r in records}
    for (kind, release_id), index in state.positions.items():
        if kind != "release":
            continue
        logged = msgspec.json.decode(store.entry(index))["manifest_sha256"]
        found = by_id.get(release_id)
        if found is None:
            raise LogIntegrityError(f"release {release_id} is in the transparency log but not in {data.release_log}: "
                                    "the release log was truncated or a record deleted; restore it from a backup")
        if found.manifest_sha256 != logged:
            raise LogIntegrityError(f"release {release_id} in {data.release_log} is not the one the transparency log "
                                    "holds: the release log was edited; restore it from a backup")
    return records


def _read_release_lines(data: DataDir) -> list[ReleaseRecord]:
    try:
        raw = data.release_log.read_bytes()
    except FileNotFoundError:
        return []
    lines = raw.split(b"\n")
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(msgspec.json.decode(line, type=ReleaseRecord))
        except msgspec.DecodeError:
            if number == len(lines):  # a torn last line of a killed publish: never logged, skipped as reading does
                continue
            raise LogIntegrityError(f"line {number} of {data.release_log} is not a release record: the release log "
                                    "was edited; restore it from a backup") from None
    return records


def restore_withdrawals(data: DataDir, store: LogStore, state: LogState) -> list[str]:
    """Write back to ``withdrawals.jsonl`` every withdrawal the log holds and the file lacks; the
    lines to tell the maintainer."""
    kept = withdrawals(data)
    said = []
    for (kind, run_id), index in sorted(state.positions.items(), key=lambda item: item[1]):
        if kind != "withdrawal" or run_id in kept:
            continue
        body = msgspec.json.decode(store.entry(index))
        record = Withdrawal(run_id=run_id, reason=body["reason"], date=dt.date.fromisoformat(body["date"]),
                            at=f"{body['date']}T00:00:00+00:00")
        _append_line(data, msgspec.json.encode(record) + b"\n")
        said.append(f"restored the withdrawal of {run_id} ({body['date']}: {body['reason']}) from the transparency "
                    f"log: it was missing from {data.withdrawal_log}")
    return said


def _append_line(data: DataDir, line: bytes) -> None:
    path = data.withdrawal_log
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["PREVIOUS_KEY_ENV", "LogPublication", "begin", "check_release_chain", "restore_withdrawals"]
