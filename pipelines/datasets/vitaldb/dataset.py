"""The VitalDB dataset: its snapshot from the open-data API, a local mirror folder, or the demo folder.

Real data: ``MEDBENCH_VITALDB_SOURCE`` (the API base URL, or a local folder laid out like the API),
default ``https://api.vitaldb.net``. Demo data: the generated API-layout folder (``demo.py``,
seeded). Option ``track`` (from the vitaldb-ioh task family) is the one track whose readings the
snapshot keeps.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from pipelines.datasets.base import Dataset, Log, Materialized, is_demo
from medbench.specs import DatasetSpec
from medbench.layout import DataDir
from medbench.files import atomic_directory

VITALDB_SOURCE_ENV = "MEDBENCH_VITALDB_SOURCE"
VITALDB_DEFAULT_URL = "https://api.vitaldb.net"
DEMO_SEED = 7


def vitaldb_source(data: DataDir) -> str:
    """Demo: the generated API-layout folder. Real: MEDBENCH_VITALDB_SOURCE or the public API."""
    if is_demo(data):
        from pipelines.datasets.vitaldb.demo import write_demo_vitaldb

        folder = data.raw / "demo" / "vitaldb"
        if not (folder / "trks").exists():
            with atomic_directory(folder, marker="trks") as tmp:
                write_demo_vitaldb(tmp, seed=DEMO_SEED)
        return str(folder)
    return os.environ.get(VITALDB_SOURCE_ENV) or VITALDB_DEFAULT_URL


class VitalDbDataset(Dataset):
    slug = "vitaldb"

    def materialize(self, spec: DatasetSpec, data: DataDir, options: Mapping[str, Any], log: Log) -> Materialized:
        from pipelines.datasets.vitaldb.source import load_vitaldb_snapshot

        source = vitaldb_source(data)
        snap = load_vitaldb_snapshot(source, out_dir=data.snapshots(self.slug), cache_dir=data.cache / "vitaldb",
                                     track=str(options["track"]), log=log)
        return Materialized(snap.snapshot_id, Path(snap.dir), snap.n_readings,
                            {"source": source, "cases": snap.n_cases, "cases_with_track": snap.n_track_cases})
