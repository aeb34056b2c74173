"""Publish a change at the change's cost: the tasks it touches, never the whole board.

``warehouse.publish`` takes a whole ``Catalog`` (every result, every rank row, every baseline
comparison) and so costs time in proportion to the board even when it builds the file from the
previous one (``warehouse.delta``). Here the publisher hands in a ``Change`` instead: the specs
(cheap: one row each), and for the *touched* tasks only (those with a new result or a withdrawal
that came or went) every result of the task, its rank rows and its baseline comparisons. Supersession
never crosses tasks (``superseded_map``'s key holds the task), so these results are all it needs.
The previous version's file says what the other tasks hold, and they are left as they are:

- the content hash is updated from the terms of the changed results (``warehouse.content``), so it is
  the hash a full build of the same state gives;
- the release record is built from the change alone: a delta (``warehouse.release_deltas``) of the
  changed result entries and the touched tasks' boards, signed over itself;
- the file is the previous one copied, with the change applied (``warehouse.delta``).

``NotIncremental`` (raised before anything is written) when the change cannot be applied that way:
no sound current version of today's schema, datasets or tasks that changed, a model spec removed, a
published result gone from the change's tasks. The caller then publishes the whole catalog
(docs/concepts.md, "Versions and releases"). Everything else (the lock, the temporaries of killed
publishes, the atomic pointer switch, pruning) is as ``warehouse.publish``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import msgspec

from warehouse import content, delta
from warehouse.delta import NotIncremental
from medbench.files import PUBLIC_FILE, atomic_path
from medbench.layout import DataDir
from warehouse.publish import (
    KEEP_VERSIONS,
    content_meta,
    dataset_row,
    metric_rows,
    model_row,
    result_row,
    superseded_map,
    task_row,
)
from warehouse.read import read_meta, schema_version_of
from medbench.records import ResultRecord
from warehouse.release_deltas import DELTA_FORMAT, SNAPSHOT_EVERY, write_snapshot
from warehouse.releases import (
    ReleaseRecord,
    Signer,
    append_release,
    board_rows,
    latest_release,
    make_delta_record,
    manifest_of,
    read_releases,
    release_count,
    result_entry,
)
from warehouse.repair import (
    current_for_publish,
    install,
    make_public_dir,
    prune,
    repair,
)
from warehouse.schema import (
    SCHEMA_VERSION,
    BaselineComparisonRow,
    DatasetRow,
    LeaderboardRankRow,
    MetaRow,
    ModelRow,
    TaskRow,
)
from warehouse.signing import published_record
from medbench.tempfiles import clean_warehouse_temp, publish_lock
from warehouse.versions import stamp_sound

__all__ = ["Change", "NotIncremental", "publish_change", "published_state", "read_baselines", "read_task_ranks", "stored_records"]


@dataclass
class Change:
    """What changed since the current version, with every result of each touched task."""

    datasets: list[dict[str, Any]]
    tasks: list[dict[str, Any]]
    models: list[dict[str, Any]]  # from the specs
    demo: bool
    touched: list[str]  # task refs
    results: list[ResultRecord]  # every result of the touched tasks, new ones included
    new: list[str]  # run ids not yet published
    withdrawn: dict[str, dict[str, str]]  # every withdrawal (run_id -> {reason, date})
    signatures: dict[str, dict[str, Any]]  # of the new and rewritten results (the others keep theirs)
    ranks: list[LeaderboardRankRow]  # the touched tasks' rows
    baseline_comparisons: list[dict[str, Any]]  # the touched tasks' results' rows
    code_revision: str = ""
    orphans: list[dict[str, Any]] = field(default_factory=list)  # rows of new results' models without a spec
    rewritten: list[str] = field(default_factory=list)  # published run ids whose result.json was rewritten
    kind_columns: dict[str, dict[str, str]] | None = None
    extra_meta: dict[str, str] = field(default_factory=dict)


@dataclass
class Published:
    """The few columns of every published result a change needs (one columnar read of the current file)."""

    version: str
    task_of: dict[str, str]  # run_id -> task
    withdrawn: dict[str, dict[str, str]]  # run_id -> {reason, date}
    listed_at: int | None  # when the publish of ``version`` listed the run folders (ns since the epoch)


def published_state(data: DataDir) -> Published | None:
    """The current version's run ids, their tasks and withdrawals; None when there is no sound version."""
    version = current_for_publish(data)
    if version is None:
        return None
    con = duckdb.connect(str(data.version_file(version)), read_only=True)
    try:
        rows = con.execute("SELECT run_id, task FROM results").fetchall()
        gone = con.execute("SELECT run_id, withdrawn_reason, CAST(withdrawn_date AS VARCHAR) FROM results "
                           "WHERE withdrawn_reason IS NOT NULL").fetchall()
        listed = con.execute("SELECT value FROM meta WHERE key = 'listed_at'").fetchone()
    finally:
        con.close()
    return Published(version, dict(rows), {r: {"reason": why, "date": when} for r, why, when in gone},
                     int(listed[0]) if listed else None)


def stored_records(data: DataDir, version: str, run_ids: Sequence[str]) -> dict[str, str]:
    """run_id -> the published record (JSON text) of ``run_ids`` in ``version``."""
    con = duckdb.connect(str(data.version_file(version)), read_only=True)
    try:
        return dict(con.execute("SELECT run_id, CAST(record AS VARCHAR) FROM results WHERE run_id IN (SELECT unnest(?))",
                                [list(run_ids)]).fetchall())
    finally:
        con.close()


def _old_rows(con: duckdb.DuckDBPyConnection, tasks: Sequence[str]) -> dict[str, tuple]:
    return {row[0]: row[1:] for row in con.execute(
        "SELECT run_id, superseded_by, withdrawn_reason, CAST(withdrawn_date AS VARCHAR), CAST(signature AS VARCHAR), "
        "predictions_sha256, CAST(record AS VARCHAR) FROM results WHERE task IN (SELECT unnest(?))",
        [list(tasks)]).fetchall()}


def _old_baselines(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    names = [f.name for f in msgspec.structs.fields(BaselineComparisonRow)]
    rows = con.execute(f"SELECT {', '.join(names)} FROM baseline_comparisons WHERE run_id IN (SELECT unnest(?))",
                       [list(run_ids)]).fetchall()
    return [dict(zip(names, row)) for row in rows]


def _orphans(con: duckdb.DuckDBPyConnection, change: Change) -> list[dict[str, Any]]:
    """Model rows the previous version kept from results (no spec): kept; a model whose spec was removed
    (its row had a spec) needs a full build, which rebuilds its row from its results."""
    specified = {m["slug"] for m in change.models}
    names = [f.name for f in msgspec.structs.fields(ModelRow)]
    kept = []
    for row in con.execute(f"SELECT {', '.join(names)} FROM models").fetchall():
        m = dict(zip(names, row))
        if m["slug"] in specified:
            continue
        if m["spec"] != "{}":
            raise NotIncremental(f"the spec of model {m['slug']} was removed")
        kept.append({**m, "spec": msgspec.json.decode(m["spec"])})
    return kept


def _signature_value(text: str | None) -> str | None:
    return msgspec.json.decode(text)["value"] if text else None


def _signature_text(signature: Mapping[str, Any] | None) -> str | None:
    return content.canonical(signature).decode() if signature else None


@dataclass
class _Plan:
    """The change worked out against the previous file: what the new version holds for the touched tasks."""

    previous: str
    models: list[dict[str, Any]]
    superseded: dict[str, str]
    signatures: dict[str, dict[str, Any]]
    changed: list[str]
    results_sum: int
    content_hash: str
    spec_hashes: tuple[dict[str, str], dict[str, str]]  # the previous version's tasks and models
    n_results: int


def _plan(data: DataDir, change: Change, previous: str) -> _Plan:
    meta = read_meta(data, previous)
    if schema_version_of(meta) != SCHEMA_VERSION or "results_sum" not in meta:
        raise NotIncremental("the current version was built before incremental publishing")
    if meta.get("specs_sha256") != content.specs_sha256(change.datasets, change.tasks):
        raise NotIncremental("datasets or tasks changed")
    by_id = {r.run_id: r for r in change.results}
    con = duckdb.connect(str(data.version_file(previous)), read_only=True)
    try:
        old = _old_rows(con, change.touched)
        if not old.keys() <= by_id.keys():
            raise NotIncremental("a published result left the catalog")
        old_baselines = _old_baselines(con, list(old))
        kept = _orphans(con, change)  # a model's row stays the one its first published result gave it
        models = change.models + kept + [m for m in change.orphans if m["slug"] not in {k["slug"] for k in kept}]
        spec_hashes = (dict(con.execute("SELECT ref, spec_hash FROM tasks").fetchall()),
                       dict(con.execute("SELECT slug, spec_hash FROM models").fetchall()))
        n_results = con.execute("SELECT count(*) FROM results").fetchone()[0] + len(by_id.keys() - old.keys())
    finally:
        con.close()
    superseded = superseded_map(change.results, change.withdrawn)
    signatures = dict(change.signatures)
    changed: list[str] = []
    minus: list[int] = []
    plus: list[int] = []
    rewritten = set(change.rewritten)
    for r in change.results:
        before = old.get(r.run_id)
        if before is not None and r.run_id not in signatures:
            signatures[r.run_id] = msgspec.json.decode(before[3]) if before[3] else None
        sig = signatures.get(r.run_id)
        w = change.withdrawn.get(r.run_id)
        now = (superseded.get(r.run_id), w["reason"] if w else None, w["date"] if w else None,
               _signature_text(sig), r.predictions_sha256)
        if before is not None and before[:5] == now and r.run_id not in rewritten:
            continue
        if before is not None and before[4] != r.predictions_sha256:
            raise NotIncremental(f"the predictions of {r.run_id} were rewritten")
        changed.append(r.run_id)
        plus.append(content.result_term(content.record_sha256(published_record(r)), sig["value"] if sig else None, w))
        if before is not None:
            old_w = {"reason": before[1], "date": before[2]} if before[1] is not None else None
            minus.append(content.result_term(content.stored_record_sha256(before[5]), _signature_value(before[3]),
                                             old_w))
    minus += [content.baseline_term(b) for b in old_baselines]
    plus += [content.baseline_term(b) for b in change.baseline_comparisons]
    results_sum = content.total(plus, int(meta["results_sum"], 16) - sum(minus))
    return _Plan(previous, models, superseded, {k: v for k, v in signatures.items() if v}, changed, results_sum,
                 content.content_hash(change.datasets, change.tasks, models, change.demo, results_sum), spec_hashes,
                 n_results)


def publish_change(data: DataDir, change: Change, now: dt.datetime | None = None,
                   sign: Signer | None = None) -> tuple[str, bool]:
    """Publish ``change`` on top of the current version; (version, changed) as ``warehouse.publish``."""
    data.warehouse.mkdir(parents=True, exist_ok=True)
    make_public_dir(data.warehouse)
    with publish_lock(data) as locked:
        if locked:
            clean_warehouse_temp(data)
        previous = current_for_publish(data)
        if previous is None:
            raise NotIncremental("no sound current version")
        plan = _plan(data, change, previous)
        if read_meta(data, previous).get("content_hash") == plan.content_hash:
            repair(data, previous)
            return previous, False
        now = now or dt.datetime.now(dt.UTC)
        version = now.strftime("%Y%m%dT%H%M%S%fZ") + "-" + plan.content_hash[:8]
        record = change_record(data, change, plan, version, now, sign)
        with atomic_path(data.version_file(version), mode=PUBLIC_FILE) as tmp:
            try:
                _build(tmp, data, change, plan, version, now, record)
            except BaseException:
                Path(f"{tmp}.wal").unlink(missing_ok=True)  # atomic_path removes the file itself
                raise
        stamp_sound(data, version)  # built and checkpointed here: later checks skip re-reading it
        append_release(data, record)
        if release_count(data) % SNAPSHOT_EVERY == 0:
            write_snapshot(data, version, manifest_of(data, record))
        install(data, version)
        prune(data, keep=KEEP_VERSIONS, current=version)
    return version, True


def change_record(data: DataDir, change: Change, plan: _Plan, version: str, now: dt.datetime,
                  sign: Signer | None) -> ReleaseRecord:
    """The release record: a delta of the changed entries and the touched tasks' boards."""
    earlier = latest_release(data)
    if earlier is None:
        raise NotIncremental("no release to build a delta on")
    by_id = {r.run_id: r for r in change.results}
    primary = {}
    for r in change.results:
        primary.setdefault(r.task, r.primary.name)
    ranks = {(r.task, r.run_id): r for r in change.ranks if r.model_type == "" and r.metric == primary.get(r.task)}
    boards: dict[str, list[ResultRecord]] = {t: [] for t in change.touched}
    for r in change.results:
        on_board = not (r.judge is not None and ranks and (r.task, r.run_id) not in ranks)
        if r.run_id not in change.withdrawn and r.run_id not in plan.superseded and on_board:
            boards[r.task].append(r)
    old_tasks, old_models = plan.spec_hashes
    new_tasks = {f"{t['slug']}@{t['version']}": t["spec_hash"] for t in change.tasks}
    new_models = {m["slug"]: m["spec_hash"] for m in plan.models}
    body = {
        "format": DELTA_FORMAT, "release": version, "previous_manifest_sha256": earlier.manifest_sha256,
        "demo": change.demo, "code_revision": change.code_revision,
        "specs": {"tasks": {k: v for k, v in new_tasks.items() if old_tasks.get(k) != v},
                  "models": {k: v for k, v in new_models.items() if old_models.get(k) != v}},
        "specs_removed": {"tasks": sorted(old_tasks.keys() - new_tasks.keys()),
                          "models": sorted(old_models.keys() - new_models.keys())},
        "results": [result_entry(by_id[i], plan.superseded, change.withdrawn) for i in sorted(plan.changed)],
        "removed": [],
        "leaderboards": {t: board_rows(rs, ranks) for t, rs in sorted(boards.items()) if rs},
        "leaderboards_removed": sorted(t for t, rs in boards.items() if not rs),
    }
    return make_delta_record(body, now, earlier, plan.n_results, [*earlier.tasks, *(r.task for r in change.results)],
                             sign)


def _build(path: Path, data: DataDir, change: Change, plan: _Plan, version: str, now: dt.datetime,
           record: ReleaseRecord) -> None:
    by_id = {r.run_id: r for r in change.results}
    delta.copy_previous(data.version_file(plan.previous), path)
    con = duckdb.connect(str(path))
    try:
        delta.add_predictions(con, data, [by_id[i] for i in change.new], change.tasks, change.kind_columns)
        meta = {"warehouse_version": version, "published_at": now.isoformat(), "content_hash": plan.content_hash,
                "demo": "true" if change.demo else "false", "schema_version": str(SCHEMA_VERSION), **change.extra_meta,
                **content_meta(change.datasets, change.tasks, plan.results_sum)}
        delta.replace_specs(con, {
            MetaRow: [MetaRow(key=k, value=v) for k, v in sorted(meta.items())],
            DatasetRow: [dataset_row(d) for d in change.datasets],
            TaskRow: [task_row(t) for t in change.tasks],
            ModelRow: [model_row(m) for m in plan.models]})
        delta.replace_results(
            con, plan.changed,
            lambda: [result_row(by_id[i], plan.superseded.get(i), change.withdrawn.get(i), plan.signatures.get(i))
                     for i in plan.changed],
            lambda: [row for i in plan.changed for row in metric_rows(by_id[i])])
        delta.replace_ranks(con, change.ranks, tasks=change.touched)
        delta.replace_baselines(con, [BaselineComparisonRow(**b) for b in change.baseline_comparisons],
                                run_ids=list(by_id))
        # the file holds every release of the log (the usual case): only the new one is added; else (a
        # publish killed after appending its release) the log's records the file lacks too
        held = con.execute("SELECT count(*) FROM releases").fetchone()[0]
        delta.append_releases(con, [record] if held == release_count(data) else [*read_releases(data), record])
        con.execute("CHECKPOINT")
    finally:
        con.close()


def read_task_ranks(data: DataDir, version: str, tasks: Sequence[str]) -> list[LeaderboardRankRow]:
    """The rank rows of ``tasks`` in ``version`` (for ``rank_rows`` to reuse their unchanged blocks)."""
    names = [f.name for f in msgspec.structs.fields(LeaderboardRankRow)]
    con = duckdb.connect(str(data.version_file(version)), read_only=True)
    try:
        rows = con.execute(f"SELECT {', '.join(names)} FROM leaderboard_ranks WHERE task IN (SELECT unnest(?))",
                           [list(tasks)]).fetchall()
    finally:
        con.close()
    return [LeaderboardRankRow(**dict(zip(names, row))) for row in rows]


def read_baselines(data: DataDir, version: str, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The baseline comparison rows of ``run_ids`` in ``version`` (reused while their baseline run stays)."""
    con = duckdb.connect(str(data.version_file(version)), read_only=True)
    try:
        return _old_baselines(con, run_ids)
    finally:
        con.close()
