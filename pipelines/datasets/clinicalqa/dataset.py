"""The ClinicalQA dataset: its snapshot from the Hugging Face Hub, a local mirror, or the demo file.

Real data: ``MEDBENCH_CLINICALQA_SOURCE`` (a local ``.parquet``/``.jsonl`` file or a folder laid
out like the Hub repository), else the Hub at the spec's pinned revision. Demo data: the generated
JSONL (``demo.py``, seeded), in the real schema. Option ``expected_rows`` (from the clinicalqa
task family) is the row count the snapshot must have.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from pipelines.datasets.base import Dataset, Log, Materialized, is_demo
from pipelines.datasets.clinicalqa.common import CLINICALQA_SOURCE_ENV
from pipelines.datasets.clinicalqa.demo import write_demo_clinicalqa
from pipelines.datasets.clinicalqa.source import load_clinicalqa_snapshot
from medbench.specs import DatasetSpec
from medbench.layout import DataDir
from medbench.files import atomic_path

DEMO_SEED = 11


def clinicalqa_source(data: DataDir) -> str | None:
    """Demo: the generated JSONL. Real: MEDBENCH_CLINICALQA_SOURCE, else None (= the hub)."""
    if is_demo(data):
        path = data.raw / "demo" / "clinicalqa.jsonl"
        if not path.exists():
            with atomic_path(path) as tmp:
                write_demo_clinicalqa(tmp, seed=DEMO_SEED)
        return str(path)
    return os.environ.get(CLINICALQA_SOURCE_ENV) or None


class ClinicalQADataset(Dataset):
    slug = "clinicalqa"

    def materialize(self, spec: DatasetSpec, data: DataDir, options: Mapping[str, Any], log: Log) -> Materialized:
        source = clinicalqa_source(data)
        snap = load_clinicalqa_snapshot(spec, expected_rows=int(options["expected_rows"]),
                                        out_dir=data.snapshots(self.slug), source=source,
                                        cache_dir=data.cache / "huggingface", log=log)
        return Materialized(snap.snapshot_id, Path(snap.path), snap.n_rows, {"source": source or "hub"})
