"""Every edge of the vitaldb-ioh@0 window and label definitions, on hand-built series."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from pipelines.datasets.vitaldb.source import write_snapshot
from support.plugins import specs as load_specs
from pipelines.tasks.vitaldb_ioh.grid import case_layout
from pipelines.tasks.vitaldb_ioh.instances import build_windows, read_windows
from pipelines.tasks.vitaldb_ioh.windows import windows_from_readings

S = load_specs().task("vitaldb-ioh@0").ioh
IB, HB = S.input_bins, S.horizon_bins
T = 600  # the single prediction time of the standard case below
OPSTART, OPEND = T - S.input_seconds, T + S.horizon_seconds


def series(n_bins: int = 500, value: float = 80.0) -> np.ndarray:
    return np.full(n_bins, value, dtype=np.float64)


def run(values: np.ndarray, opstart: float = OPSTART, opend: float = OPEND, times: np.ndarray | None = None):
    """One case whose bin k holds ``values[k]`` (NaN = no reading), read at 2k + 0.7 s."""
    if times is None:
        times = np.arange(len(values)) * S.bin_seconds + 0.7
    keep = ~np.isnan(values)
    times, vals = np.asarray(times)[keep], np.asarray(values)[keep]
    return windows_from_readings(
        np.array([1]),
        np.array([opstart]),
        np.array([opend]),
        np.ones(len(times), dtype=np.int32),
        times,
        vals.astype(np.float32),
        S,
    )


def input_bins() -> slice:
    first = (T - S.input_seconds) // S.bin_seconds
    return slice(first, first + IB)


def horizon_bins() -> slice:
    first = T // S.bin_seconds
    return slice(first, first + HB)


def horizon_run(start: int, length: int, value: float = 55.0) -> np.ndarray:
    v = series()
    h = horizon_bins().start
    v[h + start : h + start + length] = value
    return v


def single_label(values: np.ndarray) -> int:
    w = run(values)
    assert list(w.t) == [T], "expected exactly the one window at T"
    return int(w.label[0])


# --------------------------------------------------------------------------- labels


def test_exactly_event_bins_below_threshold_is_an_event():
    assert single_label(horizon_run(40, S.event_bins)) == 1


def test_one_bin_short_is_not_an_event():
    assert single_label(horizon_run(40, S.event_bins - 1)) == 0


def test_a_missing_bin_breaks_a_run():
    v = horizon_run(20, 45)
    v[horizon_bins().start + 40] = np.nan  # 20 + 24 bins around the gap, each < 30
    assert single_label(v) == 0


def test_a_run_reaching_the_horizon_end_counts():
    assert single_label(horizon_run(HB - S.event_bins, S.event_bins)) == 1


def test_a_run_cut_by_the_horizon_end_does_not_count():
    v = series()
    h = horizon_bins()
    v[h.stop - 20 : h.stop + 40] = 55.0  # 20 bins inside the horizon, the rest after it
    assert single_label(v) == 0


def test_bins_before_the_horizon_do_not_extend_a_run():
    v = series()
    h = horizon_bins().start
    v[h - 10 : h + 25] = 55.0  # 10 input bins (not in progress) + 25 horizon bins
    assert single_label(v) == 0


def test_a_value_of_exactly_the_threshold_is_not_below():
    v = horizon_run(40, S.event_bins)
    v[horizon_bins().start + 55] = S.threshold
    assert single_label(v) == 0
    v[horizon_bins().start + 55] = np.nextafter(np.float32(S.threshold), np.float32(0))
    assert single_label(v) == 1


def test_artifacts_at_the_validity_limits():
    # validity through the counts: the input has exactly the minimum of valid bins if ``value`` is valid
    for value, valid in [(19.9, False), (20.0, True), (200.0, True), (200.1, False)]:
        w = run(_with_missing_input(IB - S.min_valid_input_bins, extra=value))
        assert (len(w.t) == 1) == valid, value
    # a value below the valid minimum is missing, so it breaks a run below the threshold
    v = horizon_run(40, S.event_bins)
    v[horizon_bins().start + 50] = 19.9
    assert single_label(v) == 0
    v[horizon_bins().start + 50] = 20.0
    assert single_label(v) == 1


def _with_missing_input(n_missing: int, extra: float | None = None) -> np.ndarray:
    """Input with ``n_missing`` missing bins; with ``extra``, one of the other bins holds that value."""
    v = series()
    i = input_bins()
    v[i.start : i.start + n_missing] = np.nan
    if extra is not None:
        v[i.start + n_missing] = extra
    return v


# --------------------------------------------------------------------------- keep rules


def test_valid_input_bins_at_the_minimum_and_one_below():
    missing = IB - S.min_valid_input_bins
    assert len(run(_with_missing_input(missing)).t) == 1
    assert len(run(_with_missing_input(missing + 1)).t) == 0


def test_valid_horizon_bins_at_the_minimum_and_one_below():
    missing = HB - S.min_valid_horizon_bins
    v = series()
    h = horizon_bins()
    v[h.stop - missing : h.stop] = np.nan
    assert len(run(v).t) == 1
    v[h.stop - missing - 1] = np.nan
    w = run(v)
    assert len(w.t) == 0 and w.dropped_horizon == 1


def test_event_in_progress_is_dropped():
    v = series()
    i = input_bins()
    v[i.stop - S.in_progress_bins : i.stop] = 55.0
    w = run(v)
    assert len(w.t) == 0 and w.dropped_in_progress == 1


def test_in_progress_needs_all_of_the_last_bins_below():
    v = series()
    i = input_bins()
    v[i.stop - S.in_progress_bins : i.stop] = 55.0
    v[i.stop - 5] = 70.0  # 29 of the last 30 below
    assert len(run(v).t) == 1
    v[i.stop - 5] = np.nan  # 29 valid and below, one missing: not all valid
    assert len(run(v).t) == 1
    v[i.stop - 5] = S.threshold  # exactly the threshold is not below
    assert len(run(v).t) == 1


def test_last_reading_in_a_bin_wins():
    v = series()
    i = input_bins()
    k = i.start + 10
    times = np.arange(len(v)) * 2.0 + 0.7
    # add a second reading later in bin k with another value, then one in bin k+1 that is an artifact
    extra_t = np.array([k * 2.0 + 1.9, (k + 1) * 2.0 + 1.5])
    extra_v = np.array([50.0, 250.0])
    all_t = np.concatenate([times, extra_t])
    all_v = np.concatenate([v, extra_v])
    order = np.argsort(all_t, kind="stable")
    w = run(all_v[order], times=all_t[order])
    assert w.inputs[0, 10] == np.float32(50.0)
    assert np.isnan(w.inputs[0, 11])  # the later 250 wins the bin, and is then missing
    assert w.inputs[0, 12] == np.float32(80.0)


def test_bin_boundaries_are_half_open():
    v = series()
    i = input_bins()
    times = np.arange(len(v)) * 2.0 + 0.7
    times[i.start + 3] = (i.start + 4) * 2.0  # exactly 2k+2 belongs to bin k+1 (after its own reading)
    order = np.argsort(times, kind="stable")
    w = run(v[order], times=times[order])
    assert np.isnan(w.inputs[0, 3]) and w.inputs[0, 4] == np.float32(80.0)


# --------------------------------------------------------------------------- prediction times


def test_window_exactly_at_the_operation_edges():
    assert list(run(series(), OPSTART, OPEND).t) == [T]
    assert list(run(series(), OPSTART + 1, OPEND).t) == []
    assert list(run(series(), OPSTART, OPEND - 1).t) == []
    assert list(run(series(), OPSTART - 0.5, OPEND + 0.5).t) == [T]


def test_prediction_times_are_multiples_of_the_stride_from_case_start():
    opstart, opend = 317.0, 1500.0
    w = run(series(800), opstart, opend)
    first = math.ceil((opstart + S.input_seconds) / S.stride_seconds) * S.stride_seconds
    last = math.floor((opend - S.horizon_seconds) / S.stride_seconds) * S.stride_seconds
    assert list(w.t) == list(range(first, last + 1, S.stride_seconds))
    assert all(
        t % S.stride_seconds == 0 and t - S.input_seconds >= opstart and t + S.horizon_seconds <= opend for t in w.t
    )


def test_layout_handles_unknown_or_short_operations():
    layout = case_layout(np.array([np.nan, 0.0, 100.0]), np.array([5000.0, np.nan, 600.0]), S)
    assert list(layout.n_times) == [0, 0, 0]


def test_inputs_are_the_bins_before_t_as_float32():
    v = series()
    i = input_bins()
    v[i] = np.arange(IB) + 30.0
    v[i.start + 7] = np.nan
    w = run(v)
    assert w.inputs.dtype == np.float32 and w.inputs.shape == (1, IB)
    expected = (np.arange(IB) + 30.0).astype(np.float32)
    expected[7] = np.nan
    np.testing.assert_array_equal(w.inputs[0], expected)


def test_cases_do_not_leak_into_each_other():
    # case 1 ends in a long hypotensive stretch; case 2 starts normal: its label must not see case 1
    v1 = series()
    v1[horizon_bins().stop :] = 50.0
    t1 = np.arange(len(v1)) * 2.0 + 0.7
    v2 = series()
    t2 = np.arange(len(v2)) * 2.0 + 0.7
    w = windows_from_readings(
        np.array([1, 2]),
        np.array([OPSTART, OPSTART]),
        np.array([OPEND, OPEND]),
        np.r_[np.ones(len(t1)), np.full(len(t2), 2)].astype(np.int32),
        np.r_[t1, t2],
        np.r_[v1, v2].astype(np.float32),
        S,
    )
    assert list(w.case_index) == [0, 1] and list(w.label) == [0, 0]


# --------------------------------------------------------------------------- through Parquet


@pytest.fixture()
def snapshot_dir(tmp_path: Path) -> Path:
    v = horizon_run(10, S.event_bins)
    times = np.arange(len(v)) * 2.0 + 0.7
    cases = pl.DataFrame(
        {"caseid": [7, 8, 9], "subjectid": [70, 70, 90], "opstart": [OPSTART] * 3,
         "opend": [OPEND, OPEND + 30, OPEND], "age": [50, 60, 16], "ane_type": ["General"] * 3,
         "opname": ["Lobectomy", "Wound revision", "Lobectomy"]}
    )  # fmt: skip
    tracks = pl.DataFrame({"caseid": [7, 8, 9], "tname": [S.track] * 3, "tid": ["a" * 16, "b" * 16, "c" * 16]})
    readings = pl.DataFrame(
        {
            "caseid": np.repeat([7, 8, 9], len(v)).astype(np.int32),
            "time": np.tile(times, 3),
            "value": np.tile(v, 3).astype(np.float32),
        }
    )
    return write_snapshot(cases, tracks, readings, tmp_path / "snap", track=S.track).dir


def test_build_windows_writes_the_documented_parquet(snapshot_dir: Path, tmp_path: Path):
    out = tmp_path / "windows.parquet"
    summary = build_windows(snapshot_dir, S, out, log=lambda _: None)
    schema = pq.read_schema(out)
    assert schema.names == ["instance_id", "caseid", "subjectid", "t", "split", "label", "sex", "age", "input"]
    assert str(schema.field("input").type).startswith("fixed_size_list<") and schema.field("input").type.list_size == IB
    meta, inputs = read_windows(out)
    assert meta["instance_id"].to_list() == ["7:600", "8:600", "8:630"]  # case 9 is a child
    assert meta["caseid"].dtype == pl.Int32 and meta["t"].dtype == pl.Int32 and meta["label"].dtype == pl.Int8
    assert meta["label"].to_list()[:2] == [1, 1]
    assert inputs.dtype == np.float32 and inputs.shape == (3, IB)
    assert summary.n_windows == 3 and summary.n_cohort_cases == 2 and summary.n_subjects == 1
    split = meta["split"][0]
    assert summary.splits[split].windows == 3 and summary.splits[split].positives == int(meta["label"].sum())
    only, only_inputs = read_windows(out, split=split)
    assert only.height == 3 and only_inputs.shape == (3, IB)
