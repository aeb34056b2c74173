"""Publishing: build a complete new DuckDB file, then switch a pointer to it atomically.

DuckDB cannot be opened read-only by one process while another writes it in place, and a
process that reopens the same path gets its cached old instance. So a published file is never
written again: each publish builds ``medbench-<version>.duckdb`` under a temporary name, renames
it into place, and only then replaces the ``CURRENT`` pointer (and the analysts' symlink)
(``medbench.files``). Readers holding an older version keep reading it; the last three stay.

Identical content keeps the current version, unless that version was built with an older table
schema (``meta.schema_version`` missing or lower than ``SCHEMA_VERSION``): then it is rebuilt, so
an existing data directory is brought up to date by the next ``medbench materialize``.

A publish is also the one writer that may repair the warehouse (readers stay read-only): it runs
under ``warehouse/.publish.lock``, removes the temporaries of publishes that were killed
(``medbench.tempfiles``), starts from the newest sound version when the pointer or the current
file is damaged, repairs the pointer and the analysts' link even when nothing changed, deletes
damaged version files when pruning, and writes everything world-readable (``warehouse.repair``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from collections.abc import Collection
from pathlib import Path
from typing import Any

import duckdb
import msgspec

from warehouse import content, delta
from medbench.files import PUBLIC_FILE, atomic_path
from warehouse.portable import create_prediction_tables, insert_releases
from warehouse.releases import (ReleaseRecord, Signer, append_release, build_manifest, make_record, manifest_of,
                                read_releases)
from warehouse.release_deltas import SNAPSHOT_EVERY, write_snapshot
from warehouse.signing import published_record
from medbench.layout import DataDir
from warehouse.read import current_version, read_meta, schema_version_of
from warehouse.repair import current_for_publish, install, make_public_dir, prune, repair
from medbench.tempfiles import clean_warehouse_temp, publish_lock
from warehouse.versions import stamp_sound
from medbench.records import ResultRecord, contamination_of
from warehouse.schema import (
    CREATE_TABLES,
    SCHEMA_VERSION,
    DatasetRow,
    LeaderboardRankRow,
    MetaRow,
    MetricRow,
    ModelRow,
    ResultRow,
    TaskRow,
    insert_rows,
)
from warehouse.schema import BaselineComparisonRow

__all__ = ["KEEP_VERSIONS", "Catalog", "current_version", "publish", "superseded_map"]

KEEP_VERSIONS = 3


@dataclass
class Catalog:
    """What one published version holds. Rows are plain dicts keyed by column name (the content hash,
    and so the version name, is computed from them); ``publish`` turns them into ``warehouse.schema`` rows."""

    datasets: list[dict[str, Any]]
    tasks: list[dict[str, Any]]
    models: list[dict[str, Any]]
    results: list[ResultRecord]
    demo: bool
    extra_meta: dict[str, str] = field(default_factory=dict)
    # Rank rows computed by the pipeline (``pipelines.engine.ranking``) from the results' predictions: derived
    # from ``results`` alone, so not part of the content hash.
    ranks: list[LeaderboardRankRow] = field(default_factory=list)
    # rows of ``baseline_comparisons`` (computed by pipelines.engine.reference_model, handed in as data)
    baseline_comparisons: list[dict[str, Any]] = field(default_factory=list)
    # the tasks' predictions schemas (pyarrow, handed in by the pipeline): the ``predictions`` view's
    # columns while no predictions file exists; derived from ``tasks``, so not part of the content hash
    prediction_schemas: list[Any] = field(default_factory=list)
    # kind name -> its typed columns (DuckDB types by column, ``Kind.sql_types``), handed in by the
    # pipeline: one ``predictions_<kind>`` table each (``warehouse.portable``); None: the built-ins'
    kind_columns: dict[str, dict[str, str]] | None = None
    # kind name -> its list columns unnested into one row per entry (``Kind.sql_unnest``: the rubric
    # kind's grades); derived from the kinds, so not part of the content hash
    kind_unnest: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # run_id -> {reason, date} of every withdrawn result (``warehouse.withdrawals``): they stay
    # published, marked withdrawn, and leave the current leaderboards and lookups
    withdrawn: dict[str, dict[str, str]] = field(default_factory=dict)
    # the publisher's code revision, recorded in the release manifest
    code_revision: str = ""
    # run_id -> {key_id, value, signed}: each result's signature (``warehouse.signing``), served as is
    signatures: dict[str, dict[str, str]] = field(default_factory=dict)

    def results_sum(self) -> int:
        """The sum of the results' and baseline comparisons' terms (``warehouse.content``)."""
        terms = [content.result_term(content.record_sha256(published_record(r)),
                                     (self.signatures.get(r.run_id) or {}).get("value"),
                                     self.withdrawn.get(r.run_id)) for r in self.results]
        terms += [content.baseline_term(b) for b in self.baseline_comparisons]
        return content.total(terms)

    def content_hash(self, results_sum: int | None = None) -> str:
        """The specs and ``results_sum`` hashed (``warehouse.content``): the same for the same state
        however it was reached, full build or incremental publish."""
        return content.content_hash(self.datasets, self.tasks, self.models, self.demo,
                                    self.results_sum() if results_sum is None else results_sum)


def superseded_map(results: list[ResultRecord], withdrawn: Collection[str] = ()) -> dict[str, str]:
    """run_id -> the newest run of the same model, task version, tier, submitter and judge, for every
    older run (an official result, a submitter's and medbench's own baseline of the same pair all stay
    current; so does each judge's result of a rubric task). A withdrawn run supersedes nothing (the
    run before it is current again)."""
    def key(r: ResultRecord) -> tuple[str, str, str, str | None, str | None]:
        return r.model.slug, r.task, r.tier, r.provenance.submitted_by, r.judge.model if r.judge else None

    newest: dict[tuple[str, str, str, str | None, str | None], ResultRecord] = {}
    for r in results:
        if r.run_id in withdrawn:
            continue
        k = key(r)
        if k not in newest or (r.created_at, r.run_id) > (newest[k].created_at, newest[k].run_id):
            newest[k] = r
    out = {}
    for r in results:
        n = newest.get(key(r))
        if n is not None and n.run_id != r.run_id and (n.created_at, n.run_id) > (r.created_at, r.run_id):
            out[r.run_id] = n.run_id
    return out


def _is_current(data: DataDir, version: str, content_hash: str) -> bool:
    """The current version holds this content, built with today's schema (``version`` is sound:
    ``current_for_publish`` checked it)."""
    meta = read_meta(data, version)
    return meta.get("content_hash") == content_hash and schema_version_of(meta) >= SCHEMA_VERSION


def publish(data: DataDir, catalog: Catalog, now: dt.datetime | None = None,
            sign: Signer | None = None) -> tuple[str, bool]:
    """Publish ``catalog``; return (version, changed). Identical content keeps the current version
    (unless its schema is older, see the module docstring), and repairs the pointer and the link.

    One publish at a time per data directory (``publish_lock``); under it, the temporaries of
    killed publishes are removed first, and a damaged pointer or current file is worked around and
    repaired (``warehouse.repair``, a warning line each).

    Every new version is a release: its record (``warehouse.releases``; signed with ``sign`` when
    given) is appended to the release log before the pointer switches, and mirrored, with every
    earlier release, in the version's ``releases`` table."""
    data.warehouse.mkdir(parents=True, exist_ok=True)
    make_public_dir(data.warehouse)
    results_sum = catalog.results_sum()
    content_hash = catalog.content_hash(results_sum)
    catalog.extra_meta = {**catalog.extra_meta, **content_meta(catalog.datasets, catalog.tasks, results_sum)}
    with publish_lock(data) as locked:
        if locked:
            clean_warehouse_temp(data)
        current = current_for_publish(data)
        if current and _is_current(data, current, content_hash):
            repair(data, current)
            return current, False
        now = now or dt.datetime.now(dt.timezone.utc)
        version = now.strftime("%Y%m%dT%H%M%S%fZ") + "-" + content_hash[:8]
        record = release_record(data, catalog, version, now, sign)
        with atomic_path(data.version_file(version), mode=PUBLIC_FILE) as tmp:
            try:
                _build(tmp, data, catalog, version, content_hash, now, record, previous=current)
            except BaseException:
                Path(f"{tmp}.wal").unlink(missing_ok=True)  # atomic_path removes the file itself
                raise
        stamp_sound(data, version)  # built and checkpointed here: later checks skip re-reading it
        append_release(data, record)
        if len(read_releases(data)) % SNAPSHOT_EVERY == 0:
            write_snapshot(data, version, manifest_of(data, record))
        install(data, version)
        prune(data, keep=KEEP_VERSIONS, current=version)
    return version, True


def _json(value: Any) -> str:
    return msgspec.json.encode(msgspec.to_builtins(value), order="sorted").decode()


def content_meta(datasets: list[dict[str, Any]], tasks: list[dict[str, Any]], results_sum: int) -> dict[str, str]:
    """The ``meta`` keys an incremental publish starts from (``warehouse.publish_change``)."""
    return {"results_sum": content.as_hex(results_sum), "specs_sha256": content.specs_sha256(datasets, tasks)}


def meta_rows(catalog: Catalog, version: str, content_hash: str, now: dt.datetime) -> list[MetaRow]:
    meta = {
        "warehouse_version": version,
        "published_at": now.isoformat(),
        "content_hash": content_hash,
        "demo": "true" if catalog.demo else "false",
        "schema_version": str(SCHEMA_VERSION),
        **catalog.extra_meta,
    }
    return [MetaRow(key=k, value=v) for k, v in sorted(meta.items())]


def dataset_row(d: dict[str, Any]) -> DatasetRow:
    return DatasetRow(
        slug=d["slug"], name=d["name"], license=d["license"], license_url=d["license_url"], citation=d["citation"],
        doi=d["doi"], public_since=d["public_since"], description=d["description"], source=_json(d["source"]),
        snapshot_id=d.get("snapshot_id"),
    )


def task_row(t: dict[str, Any]) -> TaskRow:
    return TaskRow(
        slug=t["slug"], version=t["version"], ref=f"{t['slug']}@{t['version']}", dataset=t["dataset"], kind=t["kind"],
        title=t["title"], primary_metric=t["primary_metric"], preview=t["preview"], spec_hash=t["spec_hash"],
        spec=_json(t["spec"]), description=t["description"], cluster_column=t.get("cluster_column"),
        participant_flow=_json(t["participant_flow"]) if t.get("participant_flow") is not None else None,
    )


def model_row(m: dict[str, Any]) -> ModelRow:
    return ModelRow(
        slug=m["slug"], name=m["name"], type=m["type"], provider=m["provider"], provider_model_id=m["provider_model_id"],
        revision=m["revision"], release_date=m.get("release_date"), knowledge_cutoff=m.get("knowledge_cutoff"),
        backend=m["backend"], description=m["description"], spec_hash=m["spec_hash"], spec=_json(m["spec"]),
    )


def release_record(data: DataDir, catalog: Catalog, version: str, now: dt.datetime,
                   sign: Signer | None) -> ReleaseRecord:
    """The release record of the version being published (``warehouse.releases``): a delta from the
    previous release's full manifest, or the full manifest for the first release."""
    manifest = catalog_manifest(catalog, version)
    earlier = read_releases(data)
    if not earlier:
        return make_record(manifest, now, None, sign)
    return make_record(manifest, now, earlier[-1].id, sign, before=(earlier[-1], manifest_of(data, earlier[-1])))


def catalog_manifest(catalog: Catalog, version: str) -> dict[str, Any]:
    """The full manifest of ``catalog`` published as ``version``."""
    superseded = superseded_map(catalog.results, catalog.withdrawn)
    return build_manifest(
        release_id=version, results=catalog.results, superseded=superseded, withdrawn=catalog.withdrawn,
        task_specs={f"{t['slug']}@{t['version']}": t["spec_hash"] for t in catalog.tasks},
        model_specs={m["slug"]: m["spec_hash"] for m in catalog.models},
        code_revision=catalog.code_revision, demo=catalog.demo, ranks=catalog.ranks)


def result_row(r: ResultRecord, superseded_by: str | None, withdrawn: dict[str, str] | None = None,
               signature: dict[str, str] | None = None) -> ResultRow:
    task_slug, _, task_version = r.task.partition("@")
    p, v = r.primary, r.versions
    status, basis = contamination_of(r)
    return ResultRow(
        run_id=r.run_id, task=r.task, task_slug=task_slug, task_version=int(task_version), dataset=r.dataset,
        model_slug=r.model.slug, model_type=r.model.type, tier=r.tier, demo=r.demo, metric_name=p.name,
        metric_value=p.value, ci_low=p.ci_low, ci_high=p.ci_high, n=r.n, parse_rate=r.parse_rate, cost_usd=r.cost_usd,
        eval_date=r.eval_date, created_at=r.created_at, contamination=r.contamination, superseded_by=superseded_by,
        dataset_snapshot=v.dataset_snapshot, task_spec_hash=v.task_spec_hash, model_spec_hash=v.model_spec_hash,
        parser=v.parser, code_revision=v.code_revision, price_table_date=r.price_table_date,
        predictions_sha256=r.predictions_sha256, record=msgspec.json.encode(published_record(r)).decode(),
        contamination_status=status, contamination_basis=basis,
        status="withdrawn" if withdrawn else "superseded" if superseded_by else "current",
        withdrawn_reason=withdrawn["reason"] if withdrawn else None,
        withdrawn_date=dt.date.fromisoformat(withdrawn["date"]) if withdrawn else None,
        signature=_json(signature) if signature else None,
    )


def metric_rows(r: ResultRecord) -> list[MetricRow]:
    return [MetricRow(run_id=r.run_id, ordinal=i, name=m.name, value=m.value, ci_low=m.ci_low, ci_high=m.ci_high,
                      method=m.method)
            for i, m in enumerate(r.metrics)]


def _build(path: Path, data: DataDir, catalog: Catalog, version: str, content_hash: str, now: dt.datetime,
           record: ReleaseRecord, previous: str | None = None) -> None:
    """Build the version's file at ``path``: from ``previous``'s file plus the change when it is sound
    and of today's schema (``warehouse.delta``), else in full."""
    if previous is not None and schema_version_of(read_meta(data, previous)) == SCHEMA_VERSION:
        try:
            _build_incremental(path, data, catalog, version, content_hash, now, record, previous)
            return
        except delta.NotIncremental:
            Path(f"{path}.wal").unlink(missing_ok=True)
            path.unlink(missing_ok=True)
    _build_full(path, data, catalog, version, content_hash, now, record)


def _build_incremental(path: Path, data: DataDir, catalog: Catalog, version: str, content_hash: str,
                       now: dt.datetime, record: ReleaseRecord, previous: str) -> None:
    superseded = superseded_map(catalog.results, catalog.withdrawn)
    delta.copy_previous(data.version_file(previous), path)
    con = duckdb.connect(str(path))
    try:
        changed, new = delta.changed_results(con, catalog.results, superseded, catalog.withdrawn, catalog.signatures)
        by_id = {r.run_id: r for r in catalog.results}
        delta.add_predictions(con, data, [by_id[run_id] for run_id in new], catalog.tasks, catalog.kind_columns)
        delta.replace_specs(con, {
            MetaRow: meta_rows(catalog, version, content_hash, now),
            DatasetRow: [dataset_row(d) for d in catalog.datasets],
            TaskRow: [task_row(t) for t in catalog.tasks],
            ModelRow: [model_row(m) for m in catalog.models]})
        delta.replace_results(
            con, changed,
            lambda: [result_row(by_id[i], superseded.get(i), catalog.withdrawn.get(i), catalog.signatures.get(i))
                     for i in changed],
            lambda: [row for i in changed for row in metric_rows(by_id[i])])
        delta.replace_ranks(con, catalog.ranks)
        delta.replace_baselines(con, [BaselineComparisonRow(**b) for b in catalog.baseline_comparisons])
        delta.append_releases(con, [*read_releases(data), record])
        con.execute("CHECKPOINT")
    finally:
        con.close()


def _build_full(path: Path, data: DataDir, catalog: Catalog, version: str, content_hash: str, now: dt.datetime,
                record: ReleaseRecord) -> None:
    superseded = superseded_map(catalog.results, catalog.withdrawn)
    con = duckdb.connect(str(path))
    try:
        for statement in CREATE_TABLES:
            con.execute(statement)
        insert_rows(con, meta_rows(catalog, version, content_hash, now))
        insert_rows(con, [dataset_row(d) for d in catalog.datasets])
        insert_rows(con, [task_row(t) for t in catalog.tasks])
        insert_rows(con, [model_row(m) for m in catalog.models])
        insert_rows(con, [result_row(r, superseded.get(r.run_id), catalog.withdrawn.get(r.run_id),
                                     catalog.signatures.get(r.run_id)) for r in catalog.results])
        insert_rows(con, [row for r in catalog.results for row in metric_rows(r)])
        insert_rows(con, catalog.ranks)
        insert_rows(con, [BaselineComparisonRow(**b) for b in catalog.baseline_comparisons])
        create_prediction_tables(con, data, catalog.results, catalog.tasks, catalog.prediction_schemas,
                                 catalog.kind_columns, catalog.kind_unnest)
        insert_releases(con, [*read_releases(data), record])
        con.execute("CHECKPOINT")
    finally:
        con.close()
