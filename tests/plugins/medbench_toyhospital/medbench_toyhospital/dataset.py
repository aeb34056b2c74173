"""The ``toyhospital`` dataset: its snapshot from a real extract or, in a demo data directory, from
the generated one (``demo.py``), both read by the same loader (``source.py``).

Real data: ``MEDBENCH_TOYHOSPITAL_SOURCE`` (a folder or an http(s) base URL holding
``admissions.csv`` and ``labevents.csv``), else the dataset spec's ``[source] location``.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from medbench_toyhospital.demo import write_demo_toyhospital
from medbench_toyhospital.source import load_snapshot
from pipelines.core.specs import DatasetSpec
from pipelines.datasets.base import Dataset, Log, Materialized, is_demo
from warehouse.files import atomic_directory
from warehouse.layout import DataDir

SOURCE_ENV = "MEDBENCH_TOYHOSPITAL_SOURCE"
DEMO_SEED = 11


def source_location(spec: DatasetSpec, data: DataDir) -> str:
    """Demo: the generated folder (written once). Real: the environment's location, else the spec's."""
    if is_demo(data):
        folder = data.raw / "demo" / "toyhospital"
        if not (folder / "labevents.csv").exists():
            with atomic_directory(folder, marker="labevents.csv") as tmp:
                write_demo_toyhospital(tmp, seed=DEMO_SEED)
        return str(folder)
    return os.environ.get(SOURCE_ENV) or spec.source.location


class ToyHospitalDataset(Dataset):
    slug = "toyhospital"

    def materialize(self, spec: DatasetSpec, data: DataDir, options: Mapping[str, Any], log: Log) -> Materialized:
        location = source_location(spec, data)
        snap = load_snapshot(location, data.snapshots(self.slug))
        log(f"toyhospital: snapshot {snap.snapshot_id} ({snap.n_admissions} admissions, {snap.n_results} lab results)")
        return Materialized(snap.snapshot_id, snap.folder, snap.n_results,
                            {"source": location, "admissions": snap.n_admissions})
