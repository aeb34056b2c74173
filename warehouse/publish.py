"""Publishing: build a complete new DuckDB file, then switch a pointer to it atomically.

DuckDB cannot be opened read-only by one process while another writes it in place, and a
process that reopens the same path gets its cached old instance. So a published file is never
written again: each publish builds ``medbench-<version>.duckdb`` under a temporary name, renames
it into place, and only then replaces the ``CURRENT`` pointer (and the analysts' symlink) with
``os.replace``. Readers holding an older version keep reading it; the last three versions stay.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import msgspec

from warehouse.layout import DataDir
from warehouse.records import ResultRecord
from warehouse.schema import CREATE_TABLES, PREDICTION_COLUMNS

KEEP_VERSIONS = 3


@dataclass
class Catalog:
    """What one published version holds. Rows are plain dicts keyed by column name."""

    datasets: list[dict[str, Any]]
    tasks: list[dict[str, Any]]
    models: list[dict[str, Any]]
    results: list[ResultRecord]
    demo: bool
    extra_meta: dict[str, str] = field(default_factory=dict)

    def content_hash(self) -> str:
        body = {
            "datasets": self.datasets,
            "tasks": self.tasks,
            "models": self.models,
            "results": sorted((msgspec.to_builtins(r) for r in self.results), key=lambda r: r["run_id"]),
            "demo": self.demo,
        }
        return hashlib.sha256(msgspec.json.encode(msgspec.to_builtins(body), order="sorted")).hexdigest()


def superseded_map(results: list[ResultRecord]) -> dict[str, str]:
    """run_id -> the newest run of the same model and task version, for every older run."""
    newest: dict[tuple[str, str], ResultRecord] = {}
    for r in results:
        key = (r.model.slug, r.task)
        if key not in newest or (r.created_at, r.run_id) > (newest[key].created_at, newest[key].run_id):
            newest[key] = r
    return {r.run_id: newest[(r.model.slug, r.task)].run_id for r in results if newest[(r.model.slug, r.task)].run_id != r.run_id}


def current_version(data: DataDir) -> str | None:
    try:
        return data.pointer.read_text().strip() or None
    except FileNotFoundError:
        return None


def _current_hash(data: DataDir, version: str) -> str | None:
    path = data.version_file(version)
    if not path.exists():
        return None
    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'content_hash'").fetchone()
        return row[0] if row else None
    finally:
        con.close()


def publish(data: DataDir, catalog: Catalog, now: dt.datetime | None = None) -> tuple[str, bool]:
    """Publish ``catalog``; return (version, changed). Identical content keeps the current version."""
    data.warehouse.mkdir(parents=True, exist_ok=True)
    content_hash = catalog.content_hash()
    current = current_version(data)
    if current and _current_hash(data, current) == content_hash:
        return current, False
    now = now or dt.datetime.now(dt.timezone.utc)
    version = now.strftime("%Y%m%dT%H%M%S%fZ") + "-" + content_hash[:8]
    final = data.version_file(version)
    tmp = final.with_suffix(".duckdb.tmp")
    tmp.unlink(missing_ok=True)
    _build(tmp, data, catalog, version, content_hash, now)
    os.replace(tmp, final)
    _switch_pointer(data, version)
    _prune(data, keep=KEEP_VERSIONS)
    return version, True


def _switch_pointer(data: DataDir, version: str) -> None:
    tmp = data.pointer.with_name(f".CURRENT.{os.getpid()}")
    tmp.write_text(version + "\n")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, data.pointer)
    link_tmp = data.duckdb_link.with_name(f".medbench.duckdb.{os.getpid()}")
    link_tmp.unlink(missing_ok=True)
    os.symlink(os.path.relpath(data.version_file(version), data.root), link_tmp)
    os.replace(link_tmp, data.duckdb_link)


def _prune(data: DataDir, keep: int) -> None:
    files = sorted(data.warehouse.glob("medbench-*.duckdb"))
    for old in files[:-keep]:
        old.unlink(missing_ok=True)
        Path(str(old) + ".wal").unlink(missing_ok=True)


def _json(value: Any) -> str:
    return msgspec.json.encode(msgspec.to_builtins(value), order="sorted").decode()


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple]) -> None:
    if rows:
        con.executemany(f"INSERT INTO {table} VALUES ({', '.join(['?'] * len(rows[0]))})", rows)


def _build(path: Path, data: DataDir, catalog: Catalog, version: str, content_hash: str, now: dt.datetime) -> None:
    superseded = superseded_map(catalog.results)
    con = duckdb.connect(str(path))
    try:
        for statement in CREATE_TABLES:
            con.execute(statement)
        meta = {
            "warehouse_version": version,
            "published_at": now.isoformat(),
            "content_hash": content_hash,
            "demo": "true" if catalog.demo else "false",
            **catalog.extra_meta,
        }
        _insert(con, "meta", sorted(meta.items()))
        _insert(con, "datasets", [
            (d["slug"], d["name"], d["license"], d["license_url"], d["citation"], d["doi"],
             d["public_since"], d["description"], _json(d["source"]), d.get("snapshot_id"))
            for d in catalog.datasets
        ])
        _insert(con, "tasks", [
            (t["slug"], t["version"], f"{t['slug']}@{t['version']}", t["dataset"], t["kind"], t["title"],
             t["primary_metric"], t["preview"], t["spec_hash"], _json(t["spec"]), t["description"])
            for t in catalog.tasks
        ])
        _insert(con, "models", [
            (m["slug"], m["name"], m["type"], m["provider"], m["provider_model_id"], m["revision"],
             m.get("release_date"), m.get("knowledge_cutoff"), m["backend"], m["description"],
             m["spec_hash"], _json(m["spec"]))
            for m in catalog.models
        ])
        _insert(con, "results", [_result_row(r, superseded.get(r.run_id)) for r in catalog.results])
        _insert(con, "metrics", [
            (r.run_id, i, m.name, m.value, m.ci_low, m.ci_high) for r in catalog.results for i, m in enumerate(r.metrics)
        ])
        _create_predictions_view(con, data, catalog)
        con.execute("CHECKPOINT")
    finally:
        con.close()


def _result_row(r: ResultRecord, superseded_by: str | None) -> tuple:
    task_slug, _, task_version = r.task.partition("@")
    p = r.primary
    return (
        r.run_id, r.task, task_slug, int(task_version), r.dataset, r.model.slug, r.model.type, r.tier, r.demo,
        p.name, p.value, p.ci_low, p.ci_high, r.n, r.parse_rate, r.cost_usd, r.eval_date, r.created_at,
        r.contamination, superseded_by, r.versions.dataset_snapshot, r.versions.task_spec_hash,
        r.versions.model_spec_hash, r.versions.parser, r.versions.code_revision, r.price_table_date,
        r.predictions_sha256, msgspec.json.encode(r).decode(),
    )


def _create_predictions_view(con: duckdb.DuckDBPyConnection, data: DataDir, catalog: Catalog) -> None:
    """A view over the published runs' Parquet files (absolute paths: the view works from any cwd)."""
    files = [str(data.predictions_path(r.run_id)) for r in catalog.results if data.predictions_path(r.run_id).exists()]
    if not files:
        cols = ", ".join(f"CAST(NULL AS {typ}) AS {name}" for name, typ in PREDICTION_COLUMNS)
        con.execute(f"CREATE VIEW predictions AS SELECT {cols} WHERE false")
        return
    listing = ", ".join("'" + f.replace("'", "''") + "'" for f in sorted(files))
    con.execute(
        r"CREATE VIEW predictions AS SELECT regexp_extract(filename, '([0-9a-f]{12})/predictions\.parquet$', 1) "
        f"AS run_id, * EXCLUDE (filename) FROM read_parquet([{listing}], union_by_name = true, filename = true)"
    )
