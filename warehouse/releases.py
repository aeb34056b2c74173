"""The release log: every publish that changes content, kept forever as one compact record.

A warehouse version is a whole DuckDB file and the publisher keeps only the last three, so a
leaderboard state older than three publishes would be gone. A *release* is the part of a version a
citation needs, small enough to keep for ever: its manifest (every result id with its
``predictions_sha256`` and status, each task's leaderboard rows as they stood, the spec hashes, the
code revision). Its id is the warehouse version's id (``<UTC time>Z-<8 hex>``).

Where it lives: ``<data>/releases/releases.jsonl`` (``DataDir.release_log``), one JSON record per
line, *beside* the warehouse directory, never inside a version file, so pruning DuckDB files never
loses one. The log is append-only: a record is written once, with ``O_APPEND`` and an fsync, and
never rewritten; each names the release before it (``previous``). Each DuckDB version also mirrors
the log in its ``releases`` table (``warehouse.portable``), for analysts.

Signatures: ``manifest_bytes`` returns the exact bytes a signer signs (canonical JSON: keys sorted,
no whitespace, msgspec's encoding, the form the warehouse hashes content with). ``publish`` accepts
an optional ``sign`` callable, ``sign(manifest_bytes) -> {key_id, value, signed}``; its answer is
stored as the record's ``signature`` (None when no signer is configured). This module imports no
cryptography: the signer is handed in.

Its file name is shared on purpose: the published data's module; the route or command of the same
name serves it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from medbench.files import open_regular
from medbench.layout import DataDir
from medbench.records import ResultRecord, metric_order_value
from warehouse.release_deltas import build_delta, full_manifest, is_delta, snapshot_path
from warehouse.release_index import History, open_history, write_index

# sign(manifest bytes) -> {"key_id": str, "value": base64 str, "signed": str}
Signer = Callable[[bytes], dict[str, Any]]

MANIFEST_FORMAT = 1


class ReleaseRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One line of the release log (docs/api.md, "Releases, withdrawals and supersession"): the listing's fields, then the manifest."""

    id: str
    published_at: str  # ISO 8601, UTC
    n_results: int
    tasks: list[str]
    manifest_sha256: str  # sha256 of ``manifest_bytes(manifest)``
    previous: str | None
    manifest: dict[str, Any]
    signature: dict[str, Any] | None = None  # {key_id, value, signed}; None: published without a signer


def canonical_json(value: Any) -> bytes:
    """The canonical JSON bytes of ``value``: keys sorted, no whitespace (what is hashed and signed)."""
    return msgspec.json.encode(msgspec.to_builtins(value), order="sorted")


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    """The exact bytes a release's signature and ``manifest_sha256`` are taken over."""
    return canonical_json(manifest)


def _order_key(r: ResultRecord) -> tuple:
    return (metric_order_value(r.primary), r.eval_date, r.run_id)


def board_rows(current: Sequence[ResultRecord], ranks: Mapping[tuple[str, str], Any]) -> list[dict[str, Any]]:
    """One task's leaderboard (all models, primary metric) as a release keeps it: per row its rank,
    run, model, primary metric and rank set. ``ranks`` maps (task, run_id) to a rank row of the
    primary metric's all-models block (``warehouse.schema.LeaderboardRankRow``), when computed."""
    rows = []
    for rank, r in enumerate(sorted(current, key=_order_key), start=1):
        rr = ranks.get((r.task, r.run_id))
        stored = rr is not None and rr.rank == rank
        rows.append({
            "rank": rank, "run_id": r.run_id, "model": r.model.slug,
            "metric": {"name": r.primary.name, "value": r.primary.value, "ci_low": r.primary.ci_low,
                       "ci_high": r.primary.ci_high},
            "rank_low": rr.rank_low if stored else rank, "rank_high": rr.rank_high if stored else rank,
            "marginal_rank_low": rr.marginal_rank_low if stored else rank,
            "marginal_rank_high": rr.marginal_rank_high if stored else rank,
            "tied_with_leader": rr.tied_with_leader if stored else rank == 1,
            "rank_method": rr.method if stored else None,
        })
    return rows


def build_manifest(*, release_id: str, results: Sequence[ResultRecord], superseded: Mapping[str, str],
                   withdrawn: Mapping[str, Mapping[str, Any]], task_specs: Mapping[str, str],
                   model_specs: Mapping[str, str], code_revision: str, demo: bool,
                   ranks: Iterable[Any] = ()) -> dict[str, Any]:
    """A release's manifest: every result (id, task, model, ``predictions_sha256``, status), each
    task's leaderboard rows as they stand (current results only: neither superseded nor withdrawn),
    spec hashes and the code revision. Plain builtins, so ``manifest_bytes`` is its canonical form."""
    primary_ranks = {(r.task, r.run_id): r for r in ranks
                     if r.model_type == "" and r.metric == _primary_of(results, r.task)}
    entries, boards = [], {}
    for r in sorted(results, key=lambda r: r.run_id):
        entry = result_entry(r, superseded, withdrawn)
        status = entry["status"]
        entries.append(entry)
        # a result graded by a judge other than its task's is current but on no board: the ranked blocks
        # (``pipelines.engine.ranking``) hold the task's judge's results only
        off_board = r.judge is not None and primary_ranks and (r.task, r.run_id) not in primary_ranks
        if status == "current" and not off_board:
            boards.setdefault(r.task, []).append(r)
    return {
        "format": MANIFEST_FORMAT,
        "release": release_id,
        "demo": demo,
        "code_revision": code_revision,
        "specs": {"tasks": dict(sorted(task_specs.items())), "models": dict(sorted(model_specs.items()))},
        "results": entries,
        "leaderboards": {task: board_rows(board, primary_ranks) for task, board in sorted(boards.items())},
    }


def result_entry(r: ResultRecord, superseded: Mapping[str, str],
                 withdrawn: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One result's entry in a manifest: id, task, model, ``predictions_sha256``, status, successor."""
    status = "withdrawn" if r.run_id in withdrawn else "superseded" if r.run_id in superseded else "current"
    entry = {"run_id": r.run_id, "task": r.task, "model": r.model.slug, "predictions_sha256": r.predictions_sha256,
             "status": status, "superseded_by": superseded.get(r.run_id)}
    if status == "withdrawn":
        entry["withdrawn"] = dict(withdrawn[r.run_id])
    return entry


def make_delta_record(delta: dict[str, Any], published_at: dt.datetime, previous: ReleaseRecord, n_results: int,
                      tasks: Iterable[str], sign: Signer | None = None) -> ReleaseRecord:
    """The log record holding ``delta`` (``warehouse.release_deltas``, built by the publisher from the
    change alone), signed over the delta as ``make_record`` signs one."""
    body = manifest_bytes(delta)
    return ReleaseRecord(
        id=delta["release"], published_at=published_at.isoformat(), n_results=n_results, tasks=sorted(set(tasks)),
        manifest_sha256=hashlib.sha256(body).hexdigest(), previous=previous.id, manifest=delta,
        signature=sign(body) if sign is not None else None)


def _primary_of(results: Sequence[ResultRecord], task: str) -> str | None:
    return next((r.primary.name for r in results if r.task == task), None)


def make_record(manifest: dict[str, Any], published_at: dt.datetime, previous: str | None,
                sign: Signer | None = None, before: tuple[ReleaseRecord, dict[str, Any]] | None = None) -> ReleaseRecord:
    """The log record of the full ``manifest``, signed when a signer is given. With ``before`` (the
    previous record and its full manifest) the record holds, and is signed over, the delta from it
    (``warehouse.release_deltas``); without, the full manifest (the first release)."""
    body_value = (build_delta(before[1], manifest, before[0].manifest_sha256) if before is not None else manifest)
    body = manifest_bytes(body_value)
    return ReleaseRecord(
        id=manifest["release"], published_at=published_at.isoformat(), n_results=len(manifest["results"]),
        tasks=sorted({r["task"] for r in manifest["results"]}), manifest_sha256=hashlib.sha256(body).hexdigest(),
        previous=previous, manifest=body_value, signature=sign(body) if sign is not None else None,
    )


def manifest_of(data: DataDir, record: ReleaseRecord) -> dict[str, Any]:
    """The full manifest of ``record``: its own, or rebuilt from the nearest full record or snapshot
    before it and the deltas since (each earlier record found through the index, O(log n))."""
    if not is_delta(record.manifest):
        return record.manifest
    chain = [record]
    while is_delta(chain[-1].manifest) and not snapshot_path(data, chain[-1].id).exists():
        earlier = find_release(data, chain[-1].previous) if chain[-1].previous else None
        if earlier is None:
            break  # full_manifest says what is missing
        chain.append(earlier)
    return full_manifest(data, chain[::-1])


def append_release(data: DataDir, record: ReleaseRecord, index: bool = True) -> None:
    """Append one record to the log (one ``write`` of one line under ``O_APPEND``, then fsync); a
    record is never rewritten. Called by the publisher, under its lock; then the log's index is
    brought up to date (``warehouse.release_index``; ``index=False``: a bulk writer does it once)."""
    path = data.release_log
    path.parent.mkdir(parents=True, exist_ok=True)
    line = msgspec.json.encode(record) + b"\n"
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    if index:
        write_index(data)


_CACHE: dict[str, tuple[tuple, tuple[ReleaseRecord, ...]]] = {}


def read_releases(data: DataDir) -> tuple[ReleaseRecord, ...]:
    """Every release, oldest first (the log's order). Re-read only when the file changed (it only
    grows), so a server asks it per request at the cost of one ``stat``. A torn last line (a publish
    killed mid-write) is skipped."""
    path = data.release_log
    try:
        st = os.stat(path)
    except OSError:
        return ()
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _CACHE.get(str(path))
    if cached is not None and cached[0] == key:
        return cached[1]
    records = []
    try:
        fd = open_regular(path)
    except OSError:  # a FIFO or a device in its place would block or never end: no releases to show
        return ()
    with os.fdopen(fd, "rb") as fh:
        for line in fh:
            try:
                records.append(msgspec.json.decode(line, type=ReleaseRecord))
            except msgspec.DecodeError:
                continue
    _CACHE[str(path)] = (key, tuple(records))
    return tuple(records)


def _record_at(history: History, position: int) -> ReleaseRecord:
    return msgspec.json.decode(history.line(position), type=ReleaseRecord)


def latest_release(data: DataDir) -> ReleaseRecord | None:
    """The newest release (one read of the last line through the index)."""
    history = open_history(data)
    if history is None:
        return None
    try:
        return _record_at(history, len(history) - 1) if len(history) else None
    finally:
        history.close()


def find_release(data: DataDir, release_id: str) -> ReleaseRecord | None:
    """The release ``release_id``, or None: a binary search of the log's index, then its line."""
    history = open_history(data)
    if history is None:
        return None
    try:
        position = history.position_of(release_id)
        return None if position is None else _record_at(history, position)
    finally:
        history.close()


def releases_except(data: DataDir, known: Callable[[str], bool]) -> list[ReleaseRecord]:
    """The releases, oldest first, whose id ``known`` does not accept: only their lines are read (what
    the transparency log has not logged yet, usually the one just published)."""
    history = open_history(data)
    if history is None:
        return []
    try:
        return [_record_at(history, p) for p, rid in enumerate(history.ids()) if not known(rid)]
    finally:
        history.close()


def release_count(data: DataDir) -> int:
    history = open_history(data)
    if history is None:
        return 0
    try:
        return len(history)
    finally:
        history.close()


def newest_releases(data: DataDir, limit: int, offset: int = 0) -> list[ReleaseRecord]:
    """A page of the releases, newest first: only its own lines are read."""
    history = open_history(data)
    if history is None:
        return []
    try:
        last = len(history) - 1 - offset
        return [_record_at(history, p) for p in range(last, max(last - limit, -1), -1)]
    finally:
        history.close()


__all__ = ["MANIFEST_FORMAT", "ReleaseRecord", "Signer", "append_release", "board_rows", "build_manifest",
           "canonical_json", "find_release", "latest_release", "make_delta_record", "make_record", "manifest_bytes", "manifest_of",
           "newest_releases", "read_releases", "release_count", "releases_except", "result_entry"]
