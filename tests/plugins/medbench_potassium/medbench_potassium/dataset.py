"""The ``fhirward`` dataset: a ward's FHIR R4 bulk export (``fhir.py``) or, in a demo data directory,
the generated one in exactly that format, both read by the same loader.

Real data: ``MEDBENCH_FHIRWARD_SOURCE`` (a folder holding ``Patient.ndjson`` and
``Observation.ndjson``), else the dataset spec's ``[source] location``.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from medbench_potassium.fhir import load_snapshot, write_demo_export
from pipelines.core.specs import DatasetSpec
from pipelines.datasets.base import Dataset, Log, Materialized, is_demo
from warehouse.files import atomic_directory
from warehouse.layout import DataDir

SOURCE_ENV = "MEDBENCH_FHIRWARD_SOURCE"
DEMO_SEED = 23


def source_location(spec: DatasetSpec, data: DataDir) -> Path:
    if is_demo(data):
        folder = data.raw / "demo" / "fhirward"
        if not (folder / "Observation.ndjson").exists():
            with atomic_directory(folder, marker="Observation.ndjson") as tmp:
                write_demo_export(tmp, seed=DEMO_SEED)
        return folder
    return Path(os.environ.get(SOURCE_ENV) or spec.source.location).expanduser()


class FhirWardDataset(Dataset):
    slug = "fhirward"

    # The old spelling on purpose: the proof that a plug-in written before Dataset.materialize() still
    # registers and makes its snapshot, with a one-time DeprecationWarning (medbench/old_spellings.py;
    # tests/unit/test_old_spellings.py and tests/e2e/test_plugin_kind.py). medbench_toyhospital uses
    # the new spelling.
    def materialise(self, spec: DatasetSpec, data: DataDir, options: Mapping[str, Any], log: Log) -> Materialized:
        location = source_location(spec, data)
        snap = load_snapshot(location, data.snapshots(self.slug))
        log(f"fhirward: snapshot {snap.snapshot_id} ({snap.n_patients} patients, {snap.n_observations} potassium "
            "observations)")
        return Materialized(snap.snapshot_id, snap.folder, snap.n_observations,
                            {"source": str(location), "patients": snap.n_patients})
