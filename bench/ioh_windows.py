"""Benchmark: vitaldb-ioh windowing at VitalDB scale, vectorised vs a plain per-window pandas loop.

A synthetic snapshot (~6,000 cases of 2-4 h at ~2 s, ~30 million readings, written with the
loader's own ``write_snapshot``) goes through ``build_windows`` end to end (snapshot Parquet ->
windows Parquet) in a child process, which reports its wall time and peak RSS. The reference is a
straightforward pandas implementation of the same definitions, one window at a time, run on a
subset of cases and scaled per candidate window. Both must agree exactly on that subset (kept
windows, labels, inputs). Targets (issue 7): >= 300x, full scale < 20 s, peak < 6 GiB.

    python -m bench.ioh_windows [--scale tiny|full]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench._measure import GIB, report_child, run_child

SCALES = {
    # cases, hours (min, max), cases run through the pandas reference
    "tiny": {"cases": 30, "hours": (1.0, 1.5), "reference_cases": 2},
    "full": {"cases": 6000, "hours": (2.0, 4.0), "reference_cases": 12},
}
TARGET_RATIO, TARGET_SECONDS, TARGET_PEAK_GIB = 300, 20.0, 6.0


# --------------------------------------------------------------------------- synthetic snapshot


def synthetic_snapshot(out_dir: Path, n_cases: int, hours: tuple[float, float], seed: int = 11):
    """A snapshot in the loader's format, generated directly as arrays (no CSV round trip)."""
    import polars as pl

    from pipelines.datasets.vitaldb.source import write_snapshot

    rng = np.random.default_rng(seed)
    caseid = np.arange(1, n_cases + 1)
    subject = rng.permutation(np.arange(100_000, 100_000 + n_cases))
    repeat = rng.random(n_cases) < 0.05  # some patients with a second case
    subject[1:][repeat[1:]] = subject[:-1][repeat[1:]]
    caseend = np.round(rng.uniform(*hours, n_cases) * 3600).astype(np.int64)
    opstart = rng.integers(300, 1500, n_cases)
    opend = caseend - rng.integers(300, 1200, n_cases)
    age = rng.integers(18, 90, n_cases)
    age[rng.random(n_cases) < 0.02] = 12
    ane = np.where(rng.random(n_cases) < 0.03, "Spinal", "General")
    opname = np.where(rng.random(n_cases) < 0.01, "Liver transplantation", "Distal gastrectomy")
    cases = pl.DataFrame(
        {"caseid": caseid, "subjectid": subject, "casestart": 0, "caseend": caseend, "opstart": opstart,
         "opend": opend, "age": age, "ane_type": ane, "opname": opname}
    )  # fmt: skip
    tracks = pl.DataFrame(
        {"caseid": caseid, "tname": "Solar8000/ART_MBP", "tid": [f"{rng.integers(2**63):016x}" for _ in caseid]}
    )

    # Readings every 1.5-2.5 s, 1% dropped, two gaps per case; MAP as slow waves plus noise.
    per_case = (caseend // 2).astype(np.int64)
    case_of = np.repeat(np.arange(n_cases), per_case)
    steps = rng.uniform(1.5, 2.5, len(case_of))  # mean 2 s: some bins get two readings, some none
    elapsed = np.cumsum(steps)
    time_ = elapsed - np.repeat(
        elapsed[np.cumsum(per_case) - per_case] - steps[np.cumsum(per_case) - per_case], per_case
    )
    value = (
        rng.uniform(70, 90, n_cases)[case_of]
        + 12
        * np.sin(2 * np.pi * time_ / rng.uniform(1200, 3600, n_cases)[case_of] + rng.uniform(0, 6.3, n_cases)[case_of])
        + 6 * np.sin(2 * np.pi * time_ / rng.uniform(300, 900, n_cases)[case_of])
        + rng.normal(0, 2.0, len(time_))
    ).astype(np.float32)
    artifact = rng.random(len(time_)) < 0.003
    value[artifact] = rng.choice(np.array([0.0, 250.0], np.float32), artifact.sum())
    keep = rng.random(len(time_)) > 0.01
    for _ in range(2):
        gap_start = rng.uniform(0, caseend)[case_of]
        keep &= ~((time_ >= gap_start) & (time_ < gap_start + rng.uniform(30, 600, n_cases)[case_of]))
    readings = pl.DataFrame(
        {"caseid": caseid[case_of][keep].astype(np.int32), "time": time_[keep], "value": value[keep]}
    )
    return write_snapshot(cases, tracks, readings, out_dir, source="synthetic bench data")


# --------------------------------------------------------------------------- pandas reference


def pandas_reference(snapshot_dir: Path, settings, caseids: list[int]):
    """The definitions written plainly: one window at a time, groupby per window, a loop for runs."""
    import pandas as pd

    s = settings
    cases = pd.read_parquet(snapshot_dir / "cases.parquet")
    tracks = pd.read_parquet(snapshot_dir / "tracks.parquet")
    readings = pd.read_parquet(snapshot_dir / "readings.parquet", filters=[("caseid", "in", caseids)])
    has_track = set(tracks.loc[tracks["tname"] == s.track, "caseid"])
    rows, candidates = [], 0
    for case in cases[cases["caseid"].isin(caseids)].itertuples():
        in_cohort = (
            case.caseid in has_track
            and case.age >= s.min_age
            and case.ane_type == s.ane_type
            and s.exclude_opname_containing.lower() not in str(case.opname).lower()
        )
        if not in_cohort:
            continue
        r = readings[readings["caseid"] == case.caseid]
        t = math.ceil((case.opstart + s.input_seconds) / s.stride_seconds) * s.stride_seconds
        while t + s.horizon_seconds <= case.opend:
            candidates += 1
            window = r[(r["time"] >= t - s.input_seconds) & (r["time"] < t + s.horizon_seconds)]
            bins = np.floor(window["time"] / s.bin_seconds).astype(int)
            last = window.groupby(bins)["value"].last()
            first_bin = (t - s.input_seconds) // s.bin_seconds
            grid = last.reindex(range(first_bin, first_bin + s.input_bins + s.horizon_bins))
            grid = grid.where((grid >= s.valid_min) & (grid <= s.valid_max))
            inp, hor = grid.iloc[: s.input_bins], grid.iloc[s.input_bins :]
            tail = inp.iloc[-s.in_progress_bins :]
            keep = (
                inp.notna().sum() >= s.min_valid_input_bins
                and hor.notna().sum() >= s.min_valid_horizon_bins
                and not (tail.notna().all() and (tail < s.threshold).all())
            )
            if keep:
                run = longest = 0
                for v in hor:
                    run = run + 1 if (not np.isnan(v) and v < s.threshold) else 0
                    longest = max(longest, run)
                rows.append((f"{case.caseid}:{t}", int(longest >= s.event_bins), inp.to_numpy(dtype=np.float32)))
            t += s.stride_seconds
    return rows, candidates


# --------------------------------------------------------------------------- the bench


def _settings():
    from medbench.registry import installed_plugins
    from pipelines.engine.specs import load_specs

    return load_specs(None, installed_plugins()).task("vitaldb-ioh@0").ioh


def child(payload: dict) -> None:
    from pipelines.tasks.vitaldb_ioh.instances import build_windows

    start = time.perf_counter()
    summary = build_windows(Path(payload["snapshot"]), _settings(), Path(payload["out"]), log=lambda _: None)
    seconds = time.perf_counter() - start
    report_child({"seconds": seconds, "windows": summary.n_windows, "candidates": summary.n_candidates})


def compare(snapshot_dir: Path, windows_path: Path, settings, caseids: list[int]) -> tuple[float, int, int]:
    """Run the reference on ``caseids``; assert it agrees exactly; return (seconds, candidates, kept)."""
    import polars as pl

    from pipelines.tasks.vitaldb_ioh.instances import read_windows

    start = time.perf_counter()
    rows, candidates = pandas_reference(snapshot_dir, settings, caseids)
    seconds = time.perf_counter() - start
    meta, inputs = read_windows(windows_path)
    mine = meta.with_row_index("row").filter(pl.col("caseid").is_in(caseids))
    ids = mine["instance_id"].to_list()
    ref_ids = [r[0] for r in rows]
    if ids != ref_ids:
        raise AssertionError(f"kept windows differ: {len(ids)} vectorised vs {len(ref_ids)} reference")
    if mine["label"].to_list() != [r[1] for r in rows]:
        raise AssertionError("labels differ from the pandas reference")
    ref_inputs = np.stack([r[2] for r in rows]) if rows else np.zeros((0, settings.input_bins), np.float32)
    if not np.array_equal(inputs[mine["row"].to_numpy()], ref_inputs, equal_nan=True):
        raise AssertionError("inputs differ from the pandas reference")
    return seconds, candidates, len(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="full")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return 0
    scale = SCALES[args.scale]
    settings = _settings()
    with tempfile.TemporaryDirectory(prefix="bench-ioh-windows-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        snapshot = synthetic_snapshot(work / "snapshots", scale["cases"], scale["hours"])
        print(f"ioh_windows (scale {args.scale}): synthetic snapshot of {snapshot.n_cases:,} cases, "
              f"{snapshot.n_readings:,} readings, made in {time.perf_counter() - t0:.1f} s", flush=True)  # fmt: skip
        out = work / "windows.parquet"
        result = run_child("bench.ioh_windows", {"snapshot": str(snapshot.dir), "out": str(out)})
        fast_s, windows, candidates = result["seconds"], result["windows"], result["candidates"]
        peak_gib = result["peak_rss_bytes"] / GIB
        print(f"vectorised build_windows: {fast_s:.2f} s end to end (snapshot Parquet -> windows Parquet), "
              f"{windows:,} windows kept of {candidates:,} candidates, "
              f"{fast_s / candidates * 1e6:.2f} us per candidate window, "
              f"peak RSS {peak_gib:.2f} GiB (ru_maxrss of the child process)", flush=True)  # fmt: skip

        import polars as pl

        cohort_ids = pl.read_parquet(out, columns=["caseid"])["caseid"].unique().sort().to_list()
        pick = np.random.default_rng(5).choice(
            len(cohort_ids), size=min(scale["reference_cases"], len(cohort_ids)), replace=False
        )
        subset = sorted(int(cohort_ids[i]) for i in pick)
        ref_s, ref_candidates, ref_kept = compare(snapshot.dir, out, settings, subset)
        per_window = ref_s / max(ref_candidates, 1)
        estimated = per_window * candidates
        print(f"pandas per-window reference: {len(subset)} cases, {ref_candidates:,} candidate windows "
              f"({ref_kept:,} kept) in {ref_s:.2f} s = {per_window * 1e3:.2f} ms per window -> "
              f"{estimated:,.0f} s estimated for all {candidates:,}", flush=True)  # fmt: skip
        print(f"agreement on the {len(subset)} reference cases: identical kept windows, labels and inputs")
        ratio = estimated / fast_s
        verdict = (
            "met" if (ratio >= TARGET_RATIO and fast_s < TARGET_SECONDS and peak_gib < TARGET_PEAK_GIB) else "NOT met"
        )
        targets = f">= {TARGET_RATIO}x, < {TARGET_SECONDS:.0f} s, < {TARGET_PEAK_GIB:.0f} GiB peak"
        print(f"ratio: {ratio:,.0f}x faster than the per-window pandas reference "
              f"(targets at full scale: {targets}: {verdict})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
