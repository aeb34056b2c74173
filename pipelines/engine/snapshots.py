"""Which snapshot and which instances are current in a data directory.

Each dataset folder under ``snapshots/`` holds content-addressed snapshots (a file or a folder
named by the snapshot id) and a ``CURRENT`` file naming the one in use. Downstream steps (task
instances, runs, ``medbench score``) read the pointer, so they always agree on the snapshot id
that enters the run ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from medbench.files import switch_pointer
from medbench.layout import DataDir


@dataclass(frozen=True)
class CurrentSnapshot:
    dataset: str
    snapshot_id: str
    path: Path


class NotMaterialized(RuntimeError):
    """An upstream step has not been materialized in this data directory yet."""


def set_current_snapshot(data: DataDir, dataset: str, path: Path) -> None:
    folder = data.snapshots(dataset)
    folder.mkdir(parents=True, exist_ok=True)
    switch_pointer(folder / "CURRENT", Path(path).name)


def current_snapshot(data: DataDir, dataset: str) -> CurrentSnapshot:
    pointer = data.snapshots(dataset) / "CURRENT"
    if not pointer.exists():
        raise NotMaterialized(
            f"no {dataset} snapshot in {data.root}: materialize the {dataset}_snapshot asset first "
            f"(`medbench materialize --demo` for the demo data)"
        )
    name = pointer.read_text().strip()
    path = data.snapshots(dataset) / name
    return CurrentSnapshot(dataset=dataset, snapshot_id=Path(name).stem, path=path)


def instances_location(data: DataDir, task_ref: str, snapshot_id: str, filename: str) -> Path:
    return data.instances(task_ref) / snapshot_id / filename
