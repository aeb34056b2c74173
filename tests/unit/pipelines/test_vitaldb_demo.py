"""The generated VitalDB folder: deterministic, in the API's exact format, useful for the task."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import polars as pl
import pytest

from pipelines.datasets.vitaldb.demo import write_demo_vitaldb
from pipelines.datasets.vitaldb.source import load_vitaldb_snapshot
from support.plugins import specs as load_specs
from pipelines.tasks.vitaldb_ioh.instances import build_windows, read_windows
from support.paths import SAMPLES as SHARED_SAMPLES

SAMPLES = SHARED_SAMPLES / "vitaldb-mirror"
S = load_specs().task("vitaldb-ioh@0").ioh


def _text(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "api"
    write_demo_vitaldb(out, seed=7)
    return out


def test_byte_identical_for_a_seed_and_different_for_another(folder: Path, tmp_path: Path):
    write_demo_vitaldb(tmp_path / "again", seed=7)
    mine = sorted(p.name for p in folder.iterdir())
    assert mine == sorted(p.name for p in (tmp_path / "again").iterdir())
    assert all((folder / name).read_bytes() == (tmp_path / "again" / name).read_bytes() for name in mine)
    write_demo_vitaldb(tmp_path / "other", seed=8)
    assert (tmp_path / "other" / "cases").read_bytes() != (folder / "cases").read_bytes()


def test_format_matches_the_sample_mirror(folder: Path):
    assert _text(folder / "cases").splitlines()[0] == _text(SAMPLES / "cases").splitlines()[0]
    assert _text(folder / "trks").splitlines()[0] == "caseid,tname,tid"
    trks = pl.read_csv(_text(folder / "trks").encode())
    assert set(trks["tname"]) == {"Solar8000/ART_MBP", "Solar8000/HR", "EV1000/ART_MBP"}
    files = {p.name for p in folder.iterdir()}
    assert files == {"cases", "trks", *trks["tid"].to_list()}
    for row in trks.iter_rows(named=True):
        assert re.fullmatch(r"[0-9a-f]{16}", row["tid"])
        raw = (folder / row["tid"]).read_bytes()
        assert raw[:3] == b"\x1f\x8b\x08" and raw[3] == 0 and raw[4:8] == b"\0\0\0\0"  # no name, mtime 0
        lines = gzip.decompress(raw).decode().splitlines()
        assert lines[0] == f"Time,{row['tname']}"
        assert all(len(line.split(",")) == 2 and line.split(",")[1] != "" for line in lines[1:])
    total = sum(p.stat().st_size for p in folder.iterdir())
    assert total < 5 * 1024 * 1024


def test_holds_what_the_cohort_must_exclude(folder: Path):
    cases = pl.read_csv(_text(folder / "cases").encode())
    trks = pl.read_csv(_text(folder / "trks").encode())
    assert cases.height == 80 and cases["subjectid"].n_unique() < cases.height
    assert (cases["age"] < 18).sum() >= 1 and (cases["age"] == 18).sum() >= 1
    assert (cases["ane_type"] != "General").sum() >= 1
    transplant = cases.filter(pl.col("opname").str.to_lowercase().str.contains("transplant"))["opname"].to_list()
    assert transplant and any(name != name.lower() and name != name.title() for name in transplant)
    art = set(trks.filter(pl.col("tname") == "Solar8000/ART_MBP")["caseid"])
    ev = set(trks.filter(pl.col("tname") == "EV1000/ART_MBP")["caseid"])
    assert ev - art and ev & art


def test_readings_have_jitter_gaps_artifacts_and_doubles(folder: Path):
    trks = pl.read_csv(_text(folder / "trks").encode()).filter(pl.col("tname") == "Solar8000/ART_MBP")
    frames = []
    for row in trks.iter_rows(named=True):
        frames.append(
            pl.read_csv(_text(folder / row["tid"]).encode())
            .rename({"Solar8000/ART_MBP": "v"})
            .with_columns(pl.lit(row["caseid"]).alias("caseid"))
        )
    r = pl.concat(frames)
    steps = r.with_columns(pl.col("Time").diff().over("caseid").alias("dt"))["dt"].drop_nulls()
    assert steps.min() < 1.0 and steps.max() > 60 and 1.8 < steps.median() < 2.2
    assert (r["v"] < 20).sum() > 0 and (r["v"] > 200).sum() > 0
    bins = r.with_columns((pl.col("Time") // 2).alias("bin")).group_by("caseid", "bin").len()
    assert bins["len"].max() >= 2


def test_both_classes_in_the_test_split_and_episodes_of_varied_length(folder: Path, tmp_path: Path):
    snap = load_vitaldb_snapshot(str(folder), tmp_path / "snap", tmp_path / "cache", log=lambda _: None)
    out = tmp_path / "windows.parquet"
    summary = build_windows(snap.dir, S, out, log=lambda _: None)
    test = summary.splits["test"]
    assert 0 < test.positives < test.windows
    assert summary.splits["train"].positives > 0 and summary.splits["validation"].positives > 0
    meta, _ = read_windows(out)
    assert meta.height > 3000 and summary.dropped_in_progress > 0
    # episodes both shorter and longer than the event: maximal runs of 2-s bins below threshold
    readings = pl.read_parquet(snap.dir / "readings.parquet")
    bins = (
        readings.with_columns((pl.col("time") // S.bin_seconds).cast(pl.Int64).alias("bin"))
        .group_by("caseid", "bin", maintain_order=True)
        .agg(pl.col("value").last())
        .filter((pl.col("value") >= S.valid_min) & (pl.col("value") < S.threshold))
        .sort("caseid", "bin")
    )
    runs = (
        bins.with_columns(((pl.col("bin").diff().over("caseid") != 1).fill_null(True)).cum_sum().alias("run"))
        .group_by("run")
        .len()["len"]
    )
    assert ((runs >= 5) & (runs < S.event_bins)).sum() >= 3
    assert (runs >= 2 * S.event_bins).sum() >= 3
