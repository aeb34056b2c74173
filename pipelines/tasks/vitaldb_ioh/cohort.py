"""vitaldb-ioh: the cohort (which cases are in), from the snapshot's cases and track list."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.tasks.vitaldb_ioh.settings import IohSettings


def select_cohort(cases: pl.DataFrame, tracks: pl.DataFrame, settings: IohSettings) -> pl.DataFrame:
    """Cohort cases (caseid, subjectid, opstart, opend as float), sorted by caseid.

    A case is in when it has a track named exactly ``settings.track`` (``EV1000/ART_MBP`` is not
    ``Solar8000/ART_MBP``), age >= min_age, ane_type == the setting, and an opname that does not
    contain the excluded word in any letter case. A case without a subjectid cannot be split and is
    left out (VitalDB has none).
    """
    with_track = tracks.filter(pl.col("tname") == settings.track).select(pl.col("caseid").cast(pl.Int64)).unique()
    excluded = settings.exclude_opname_containing.lower()
    opname = pl.col("opname").cast(pl.String).fill_null("")
    return (
        cases.with_columns(
            pl.col("caseid").cast(pl.Int64),
            pl.col("subjectid").cast(pl.Int64, strict=False),
            pl.col("age").cast(pl.Float64, strict=False),
            pl.col("opstart").cast(pl.Float64, strict=False),
            pl.col("opend").cast(pl.Float64, strict=False),
        )
        .join(with_track, on="caseid", how="semi")
        .filter(
            (pl.col("age") >= settings.min_age)
            & (pl.col("ane_type").cast(pl.String) == settings.ane_type)
            & ~opname.str.to_lowercase().str.contains(excluded, literal=True)
            & pl.col("subjectid").is_not_null()
        )
        .select("caseid", "subjectid", "opstart", "opend")
        .sort("caseid")
    )


def read_cohort(snapshot_dir: Path, settings: IohSettings) -> pl.DataFrame:
    cases = pl.read_parquet(snapshot_dir / "cases.parquet")
    tracks = pl.read_parquet(snapshot_dir / "tracks.parquet")
    return select_cohort(cases, tracks, settings)
