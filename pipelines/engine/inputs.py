"""Dataset snapshots and task instances, as plain functions the Dagster assets call.

Each function reads its source (the real one, a local mirror, or the generated demo files in the
real formats), writes a content-addressed result into the data directory and moves the
``CURRENT`` pointer, so rerunning on unchanged input is a no-op that keeps every id stable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pipelines.engine.snapshots import current_snapshot, instances_path, set_current_snapshot
from pipelines.engine.specs import Specs
from warehouse.files import atomic_directory, atomic_path
from warehouse.layout import DataDir

CLINICALQA_SOURCE_ENV = "MEDBENCH_CLINICALQA_SOURCE"
VITALDB_SOURCE_ENV = "MEDBENCH_VITALDB_SOURCE"
VITALDB_DEFAULT_URL = "https://api.vitaldb.net"
DEMO_SEED_CLINICALQA = 11
DEMO_SEED_VITALDB = 7

Log = Callable[[str], None]


@dataclass(frozen=True)
class Materialised:
    """What an input step produced, for asset metadata and logs."""

    snapshot_id: str
    path: Path
    rows: int
    details: dict


def is_demo(data: DataDir) -> bool:
    return data.kind() == "demo"


# --------------------------------------------------------------------------- snapshots


def clinicalqa_source(data: DataDir) -> str | None:
    """Demo: the generated JSONL. Real: MEDBENCH_CLINICALQA_SOURCE, else None (= the hub)."""
    if is_demo(data):
        from pipelines.datasets.clinicalqa.demo import write_demo_clinicalqa

        path = data.raw / "demo" / "clinicalqa.jsonl"
        if not path.exists():
            with atomic_path(path) as tmp:
                write_demo_clinicalqa(tmp, seed=DEMO_SEED_CLINICALQA)
        return str(path)
    return os.environ.get(CLINICALQA_SOURCE_ENV) or None


def vitaldb_source(data: DataDir) -> str:
    """Demo: the generated API-layout folder. Real: MEDBENCH_VITALDB_SOURCE or the public API."""
    if is_demo(data):
        from pipelines.datasets.vitaldb.demo import write_demo_vitaldb

        folder = data.raw / "demo" / "vitaldb"
        if not (folder / "trks").exists():
            with atomic_directory(folder, marker="trks") as tmp:
                write_demo_vitaldb(tmp, seed=DEMO_SEED_VITALDB)
        return str(folder)
    return os.environ.get(VITALDB_SOURCE_ENV) or VITALDB_DEFAULT_URL


def materialise_clinicalqa_snapshot(specs: Specs, data: DataDir, log: Log) -> Materialised:
    from pipelines.datasets.clinicalqa.source import load_clinicalqa_snapshot

    task = specs.task("clinicalqa")
    assert task.choice is not None
    snap = load_clinicalqa_snapshot(
        specs.datasets["clinicalqa"], expected_rows=task.choice.n_items, out_dir=data.snapshots("clinicalqa"),
        source=clinicalqa_source(data), cache_dir=data.cache / "huggingface", log=log,
    )
    set_current_snapshot(data, "clinicalqa", Path(snap.path))
    return Materialised(snap.snapshot_id, Path(snap.path), snap.n_rows, {"source": clinicalqa_source(data) or "hub"})


def materialise_vitaldb_snapshot(specs: Specs, data: DataDir, log: Log) -> Materialised:
    from pipelines.datasets.vitaldb.source import load_vitaldb_snapshot

    task = specs.task("vitaldb-ioh")
    assert task.ioh is not None
    source = vitaldb_source(data)
    snap = load_vitaldb_snapshot(source, out_dir=data.snapshots("vitaldb"), cache_dir=data.cache / "vitaldb",
                                 track=task.ioh.track, log=log)
    set_current_snapshot(data, "vitaldb", Path(snap.dir))
    return Materialised(snap.snapshot_id, Path(snap.dir), snap.n_readings,
                        {"source": source, "cases": snap.n_cases, "cases_with_track": snap.n_track_cases})


# --------------------------------------------------------------------------- instances


def clinicalqa_items_path(data: DataDir, task_ref: str) -> Path:
    snap = current_snapshot(data, "clinicalqa")
    return instances_path(data, task_ref, snap.snapshot_id, "items.parquet")


def ioh_windows_path(data: DataDir, task_ref: str) -> Path:
    snap = current_snapshot(data, "vitaldb")
    return instances_path(data, task_ref, snap.snapshot_id, "windows.parquet")


def materialise_clinicalqa_items(specs: Specs, data: DataDir, task_ref: str, log: Log) -> Materialised:
    import pyarrow.parquet as pq

    from pipelines.datasets.clinicalqa.source import read_clinicalqa_snapshot
    from pipelines.tasks.clinicalqa.items import items_table

    task = specs.task(task_ref)
    assert task.choice is not None
    snap = current_snapshot(data, "clinicalqa")
    out = clinicalqa_items_path(data, task.ref)
    table = items_table(read_clinicalqa_snapshot(snap.path), task.choice)
    with atomic_path(out) as tmp:
        pq.write_table(table, tmp)
    log(f"{task.ref}: {table.num_rows} items from snapshot {snap.snapshot_id}")
    return Materialised(snap.snapshot_id, out, table.num_rows, {})


def materialise_ioh_windows(specs: Specs, data: DataDir, task_ref: str, log: Log) -> Materialised:
    from pipelines.tasks.vitaldb_ioh.windows import build_windows

    task = specs.task(task_ref)
    assert task.ioh is not None
    snap = current_snapshot(data, "vitaldb")
    out = ioh_windows_path(data, task.ref)
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = build_windows(snap.path, task.ioh, out, log=log)
    return Materialised(snap.snapshot_id, out, summary.n_windows, summary.as_dict())

