"""What both families read of a snapshot: each admission with one lab's results on an even grid.

An admission's results of ``itemid`` in its first ``input_hours`` are put on a grid of
``step_hours`` bins (the last result of a bin wins; a bin without one is NaN). Patients are split
train / validation / test by a fixed hash of ``subject_id``, so no patient is in two splits.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from medbench_toyhospital.source import read_snapshot


@dataclass(frozen=True)
class Gridded:
    """One row per admission (sorted by hadm_id); ``values`` float32 [admissions, bins]."""

    admissions: pa.Table
    values: np.ndarray


def lab_grid(snapshot: Path, itemid: int, input_hours: int, step_hours: int) -> Gridded:
    admissions, labs = read_snapshot(snapshot)
    admissions = admissions.sort_by("hadm_id")
    labs = labs.filter(pc.equal(labs.column("itemid"), itemid)).sort_by([("hadm_id", "ascending"),
                                                                        ("charttime", "ascending")])
    row_of = {h: i for i, h in enumerate(admissions.column("hadm_id").to_pylist())}
    admit = dict(zip(admissions.column("hadm_id").to_pylist(), admissions.column("admittime").to_pylist()))
    n_bins = input_hours // step_hours
    values = np.full((admissions.num_rows, n_bins), np.nan, dtype=np.float32)
    for hadm, when, value in zip(labs.column("hadm_id").to_pylist(), labs.column("charttime").to_pylist(),
                                 labs.column("valuenum").to_pylist()):
        if hadm not in row_of or value is None:
            continue
        hours = (when - admit[hadm]).total_seconds() / 3600
        if 0 <= hours < input_hours:
            values[row_of[hadm], int(hours // step_hours)] = value
    return Gridded(admissions, values)


def split_of(subject_id: int, salt: str, test_below: int, validation_below: int) -> str:
    """The patient's split: a bucket 0-99 from sha256 of ``salt + subject_id``."""
    bucket = int.from_bytes(hashlib.sha256(f"{salt}{subject_id}".encode()).digest()[:8], "big") % 100
    return "test" if bucket < test_below else "validation" if bucket < validation_below else "train"
