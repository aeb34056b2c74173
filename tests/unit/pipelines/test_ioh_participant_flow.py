"""The participant flow of vitaldb-ioh (cases in the snapshot -> each exclusion -> cohort -> windows
-> splits) against a direct count on the demo snapshot, done here with pandas, criterion by criterion."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pandas as pd
import pytest
from support.plugins import specs as load_specs

from pipelines.datasets.vitaldb.demo import write_demo_vitaldb
from pipelines.datasets.vitaldb.source import load_vitaldb_snapshot
from pipelines.tasks.vitaldb_ioh.instances import build_windows, flow_path

TASK = load_specs().task("vitaldb-ioh@0")
S = TASK.settings


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("flow")
    write_demo_vitaldb(root / "api", seed=7)
    snap = load_vitaldb_snapshot(str(root / "api"), root / "snap", root / "cache", log=lambda _: None)
    out = root / "windows.parquet"
    build_windows(snap.dir, S, out, log=lambda _: None)
    return snap.dir, out, msgspec.json.decode(flow_path(out).read_bytes())


def test_exclusions_match_a_direct_count(built) -> None:
    snap, _, flow = built
    cases = pd.read_parquet(snap / "cases.parquet")
    tracks = pd.read_parquet(snap / "tracks.parquet")
    assert flow["snapshot_cases"] == len(cases)
    left = cases[cases["caseid"].isin(tracks.loc[tracks["tname"] == S.track, "caseid"])]
    expected = [len(cases) - len(left)]
    age = pd.to_numeric(left["age"], errors="coerce")
    kept = left[age >= S.min_age]
    expected.append(len(left) - len(kept))
    left = kept
    kept = left[left["ane_type"] == S.ane_type]
    expected.append(len(left) - len(kept))
    left = kept
    kept = left[~left["opname"].fillna("").str.lower().str.contains(S.exclude_opname_containing.lower(), regex=False)]
    expected.append(len(left) - len(kept))
    left = kept
    kept = left[left["subjectid"].notna()]
    expected.append(len(left) - len(kept))
    assert [e["cases"] for e in flow["exclusions"]] == expected
    assert flow["cohort_cases"] == len(kept) and flow["cohort_subjects"] == kept["subjectid"].nunique()
    assert sum(expected[:4]) > 0  # the demo exercises the exclusions
    assert flow["snapshot_cases"] - sum(e["cases"] for e in flow["exclusions"]) == flow["cohort_cases"]


def test_windows_and_splits_match_a_direct_count(built) -> None:
    _, out, flow = built
    windows = pd.read_parquet(out, columns=["subjectid", "caseid", "split", "label", "sex", "age"])
    assert flow["windows"] == len(windows)
    assert flow["candidate_windows"] - sum(d["windows"] for d in flow["dropped_windows"]) == len(windows)
    for name, part in windows.groupby("split"):
        s = flow["splits"][name]
        assert (s["windows"], s["positives"]) == (len(part), int(part["label"].sum()))
        assert s["prevalence"] == pytest.approx(part["label"].mean())
        assert s["subjects"] == part["subjectid"].nunique() and s["cases"] == part["caseid"].nunique()
    assert set(windows["sex"].dropna()) <= {"M", "F"} and windows["age"].min() >= S.min_age
