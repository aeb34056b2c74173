"""The pinned subjectid split and the cohort filters of vitaldb-ioh@0."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest

from pipelines.datasets.vitaldb.demo import write_demo_vitaldb
from pipelines.datasets.vitaldb.source import load_vitaldb_snapshot
from support.plugins import specs as load_specs
from pipelines.tasks.vitaldb_ioh.cohort import select_cohort
from pipelines.tasks.vitaldb_ioh.instances import build_windows
from pipelines.tasks.vitaldb_ioh.split import SPLITS, published_test_subjects, split_codes, split_of_subject, subjects_by_split

S = load_specs().task("vitaldb-ioh@0").ioh


def direct_split(subjectid: int) -> str:
    """docs/adding-a-task.md's formula, written out with its literal constants."""
    h = int(hashlib.sha256(("vitaldb-ioh@0:" + str(subjectid)).encode()).hexdigest()[:16], 16) % 100
    return "test" if h < 20 else "validation" if h < 30 else "train"


def test_split_matches_the_formula():
    ids = list(range(1, 7000))
    got = [split_of_subject(i, S) for i in ids]
    assert got == [direct_split(i) for i in ids]
    share = {name: got.count(name) / len(got) for name in SPLITS}
    assert 0.17 < share["test"] < 0.23 and 0.08 < share["validation"] < 0.12


def test_vectorised_split_codes_agree():
    ids = [5955, 12, 5955, 4000, 12, 1]
    assert [SPLITS[c] for c in split_codes(ids, S)] == [direct_split(i) for i in ids]


@pytest.fixture(scope="module")
def demo_windows(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("split")
    write_demo_vitaldb(root / "api")
    snap = load_vitaldb_snapshot(str(root / "api"), root / "snap", root / "cache", log=lambda _: None)
    out = root / "windows.parquet"
    build_windows(snap.dir, S, out, log=lambda _: None)
    return out


def test_subjects_are_disjoint_across_splits(demo_windows: Path):
    meta = pl.read_parquet(demo_windows, columns=["subjectid", "split", "caseid"])
    per_subject = meta.group_by("subjectid").agg(pl.col("split").n_unique().alias("n"))
    assert per_subject["n"].max() == 1
    by_split = subjects_by_split(demo_windows)
    sets = [set(by_split[name]) for name in SPLITS]
    assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    assert all(direct_split(sid) == name for name in SPLITS for sid in by_split[name])
    assert published_test_subjects(demo_windows) == sorted(by_split["test"]) and by_split["test"]
    # a patient with several cases keeps them all in one split
    multi = meta.group_by("subjectid").agg(pl.col("caseid").n_unique().alias("cases")).filter(pl.col("cases") > 1)
    assert multi.height > 0


def _cases(rows: list[dict]) -> pl.DataFrame:
    base = {"subjectid": 1, "age": 50, "ane_type": "General", "opname": "Lobectomy", "opstart": 600, "opend": 4000}
    return pl.DataFrame([base | row for row in rows])


def test_cohort_filters():
    cases = _cases(
        [
            {"caseid": 1},
            {"caseid": 2},  # EV1000 only
            {"caseid": 3},  # both arterial tracks
            {"caseid": 4, "opname": "Liver TRANSPLANTation"},
            {"caseid": 5, "opname": "living donor kidney transplant"},
            {"caseid": 6, "age": 17},
            {"caseid": 7, "age": 18},
            {"caseid": 8, "ane_type": "Spinal"},
            {"caseid": 9, "ane_type": "general"},
            {"caseid": 10},  # heart rate only
            {"caseid": 11, "opname": None},
        ]
    )
    tracks = pl.DataFrame(
        {
            "caseid": [1, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11],
            "tname": [S.track, "EV1000/ART_MBP", S.track, "EV1000/ART_MBP", S.track, S.track, S.track, S.track,
                      S.track, S.track, "Solar8000/HR", S.track],
            "tid": [f"{i:016x}" for i in range(12)],
        }
    )  # fmt: skip
    cohort = select_cohort(cases, tracks, S)
    assert cohort["caseid"].to_list() == [1, 3, 7, 11]
    assert cohort.columns == ["caseid", "subjectid", "opstart", "opend", "sex", "age"]


def test_cohort_reads_the_demo_exclusions(demo_windows: Path):
    meta = pl.read_parquet(demo_windows, columns=["caseid"])
    root = demo_windows.parent
    cases = pl.read_csv(root / "api" / "cases")
    trks = pl.read_csv(root / "api" / "trks")
    excluded = cases.filter(
        (pl.col("age") < 18)
        | (pl.col("ane_type") != "General")
        | pl.col("opname").str.to_lowercase().str.contains("transplant")
        | ~pl.col("caseid").is_in(trks.filter(pl.col("tname") == S.track)["caseid"].to_list())
    )["caseid"].to_list()
    assert len(excluded) >= 8
    assert not set(excluded) & set(meta["caseid"].unique().to_list())
