"""vitaldb-ioh: the cohort (which cases are in), from the snapshot's cases and track list.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.tasks.vitaldb_ioh.settings import IohSettings


def select_cohort(cases: pl.DataFrame, tracks: pl.DataFrame, settings: IohSettings) -> pl.DataFrame:
    """Cohort cases (caseid, subjectid, opstart, opend as float, sex, age), sorted by caseid.

    A case is in when it has a track named exactly ``settings.track`` (``EV1000/ART_MBP`` is not
    ``Solar8000/ART_MBP``), age >= min_age, ane_type == the setting, and an opname that does not
    contain the excluded word in any letter case. A case without a subjectid cannot be split and is
    left out (VitalDB has none).
    """
    return cohort_with_flow(cases, tracks, settings)[0]


def cohort_with_flow(cases: pl.DataFrame, tracks: pl.DataFrame,
                     settings: IohSettings) -> tuple[pl.DataFrame, list[dict]]:
    """The cohort and its participant flow: each exclusion in turn, with the cases it removed.

    Why in this order: the flow is read top to bottom (TRIPOD+AI item 20a), each count being the
    cases the criterion removes from those the previous ones left, so the counts add up to the
    cases in the snapshot minus the cohort.
    """
    with_track = tracks.filter(pl.col("tname") == settings.track).select(pl.col("caseid").cast(pl.Int64)).unique()
    excluded = settings.exclude_opname_containing.lower()
    opname = pl.col("opname").cast(pl.String).fill_null("")
    frame = cases.with_columns(
        pl.col("caseid").cast(pl.Int64),
        pl.col("subjectid").cast(pl.Int64, strict=False),
        pl.col("age").cast(pl.Float64, strict=False),
        pl.col("opstart").cast(pl.Float64, strict=False),
        pl.col("opend").cast(pl.Float64, strict=False),
        (pl.col("sex").cast(pl.String) if "sex" in cases.columns else pl.lit(None, pl.String)).alias("sex"),
    )
    steps = [
        (f"no {settings.track} track", lambda f: f.join(with_track, on="caseid", how="semi")),
        (f"age below {settings.min_age} or missing", lambda f: f.filter(pl.col("age") >= settings.min_age)),
        (f"anaesthesia not {settings.ane_type}",
         lambda f: f.filter(pl.col("ane_type").cast(pl.String) == settings.ane_type)),
        (f"operation name contains {settings.exclude_opname_containing!r}",
         lambda f: f.filter(~opname.str.to_lowercase().str.contains(excluded, literal=True))),
        ("no subjectid", lambda f: f.filter(pl.col("subjectid").is_not_null())),
    ]
    flow = []
    for reason, keep in steps:
        kept = keep(frame)
        flow.append({"reason": reason, "cases": int(frame.height - kept.height)})
        frame = kept
    cohort = frame.select("caseid", "subjectid", "opstart", "opend", "sex", "age").sort("caseid")
    return cohort, flow


def read_cohort(snapshot_dir: Path, settings: IohSettings) -> pl.DataFrame:
    return read_cohort_with_flow(snapshot_dir, settings)[0]


def read_cohort_with_flow(snapshot_dir: Path, settings: IohSettings) -> tuple[pl.DataFrame, list[dict], int]:
    """(cohort, exclusions, cases in the snapshot)."""
    cases = pl.read_parquet(snapshot_dir / "cases.parquet")
    tracks = pl.read_parquet(snapshot_dir / "tracks.parquet")
    cohort, flow = cohort_with_flow(cases, tracks, settings)
    return cohort, flow, int(cases.height)
