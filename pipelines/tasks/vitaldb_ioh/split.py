"""vitaldb-ioh: the subject split. Split by subjectid (not caseid: one patient can have several
cases), with no stored randomness: h = int(first 16 hex digits of sha256(salt + str(subjectid)), 16)
mod 100; test if h < test_below, validation if h < validation_below, else train. The test subject
list is published with the results.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from pipelines.tasks.vitaldb_ioh.settings import IohSettings

Split = Literal["test", "validation", "train"]
SPLITS: tuple[Split, ...] = ("test", "validation", "train")


def subject_hash(subjectid: int, settings: IohSettings) -> int:
    """h = int(first 16 hex digits of sha256(salt + str(subjectid)), 16) mod 100."""
    digest = hashlib.sha256((settings.split_salt + str(int(subjectid))).encode()).hexdigest()
    return int(digest[:16], 16) % 100


def split_of_subject(subjectid: int, settings: IohSettings) -> Split:
    h = subject_hash(subjectid, settings)
    if h < settings.test_below:
        return "test"
    if h < settings.validation_below:
        return "validation"
    return "train"


def split_codes(subjectids: np.ndarray, settings: IohSettings) -> np.ndarray:
    """Index into SPLITS for each subject id (hashing each distinct subject once)."""
    unique, inverse = np.unique(np.asarray(subjectids, dtype=np.int64), return_inverse=True)
    codes = np.array([SPLITS.index(split_of_subject(int(s), settings)) for s in unique], dtype=np.int8)
    return codes[inverse.reshape(-1)] if len(unique) else np.zeros(0, dtype=np.int8)


def subjects_by_split(path: Path) -> dict[str, list[int]]:
    """Subjects with windows in each split; the "test" list is the one published with results."""
    meta = pl.read_parquet(path, columns=["subjectid", "split"])
    out: dict[str, list[int]] = {}
    for name in SPLITS:
        ids = meta.filter(pl.col("split") == name)["subjectid"].unique().sort()
        out[name] = [int(x) for x in ids]
    return out


def published_test_subjects(path: Path) -> list[int]:
    """The published list of test subjects (those with at least one test window), sorted."""
    return subjects_by_split(path)["test"]
