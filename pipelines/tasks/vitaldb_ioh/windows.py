"""vitaldb-ioh@0: prediction windows and their labels, from the flat grid (``grid.py``).

The cohort is in ``cohort.py``, the grid in ``grid.py``, the subject split in ``split.py``, and the
windows Parquet (build, read) in ``instances.py``.

Every number comes from the task's ``IohSettings`` so that a task version file, not this code,
decides what a score means. Windowing runs over *whole cases at once* with numpy: every case's
grid lives in one flat array (one contiguous segment per case, exactly as long as its windows
need), and every window statistic (valid bins, the in-progress rule, the >= 30-bin run below
threshold) is a difference of prefix sums over that array. No Python loop runs per window or per
case, which is what lets 1.9 million windows be built from ~30 million readings in seconds.

Definitions (docs/adding-a-task.md, "vitaldb-ioh@0: data and windows"), with every constant taken from the settings:

* bin k holds the readings with time in [k*bin, (k+1)*bin) s from case start; the last reading in
  a bin wins; then a value < valid_min or > valid_max makes the bin missing (NaN);
* prediction times T are the multiples of stride_seconds with T - input >= opstart and
  T + horizon <= opend; input = the bins of [T - input, T), horizon = the bins of [T, T + horizon);
* a window is kept iff it has >= min_valid_input_bins valid input bins and >= min_valid_horizon_bins
  valid horizon bins, and its last in_progress_bins input bins are not all valid and < threshold;
* label 1 iff the horizon has >= event_bins consecutive valid bins all < threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipelines.tasks.vitaldb_ioh.grid import CaseLayout, GridBuilder, case_layout
from pipelines.tasks.vitaldb_ioh.settings import IohSettings


@dataclass(frozen=True)
class WindowArrays:
    """Kept windows, in (case, T) order."""

    case_index: np.ndarray  # int64 index into the cohort arrays
    t: np.ndarray  # int64 seconds
    label: np.ndarray  # int8
    inputs: np.ndarray  # float32 [n, input_bins], NaN = missing bin
    n_candidates: int
    dropped_input: int
    dropped_horizon: int
    dropped_in_progress: int


def _prefix(mask: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out[i] = number of True in mask[:i] (length len(mask) + 1), written into ``out``."""
    out = out[: len(mask) + 1]
    out[0] = 0
    np.cumsum(mask, out=out[1:])
    return out


def windows_from_grid(grid: np.ndarray, layout: CaseLayout, settings: IohSettings) -> WindowArrays:
    """Every candidate window of every case at once, then the keep rules and the label.

    Each statistic is a difference of one prefix sum over the flat grid; the segments are sized to
    their windows, so no window's range ever reaches into another case. One prefix buffer is reused
    for the three sums (valid bins, bins below threshold, full-length runs).
    """
    s = settings
    ib, hb, step = s.input_bins, s.horizon_bins, s.stride_seconds // s.bin_seconds
    n_times = layout.n_times
    case_index = np.repeat(np.arange(len(n_times), dtype=np.int64), n_times)
    first_of_case = np.concatenate([[0], np.cumsum(n_times)[:-1]])
    j = np.arange(len(case_index), dtype=np.int64) - np.repeat(first_of_case, n_times)
    start = layout.seg_start[case_index] + j * step  # first input bin in the flat grid
    t = layout.first_t[case_index] + j * s.stride_seconds
    h0 = start + ib

    prefix = np.empty(len(grid) + 1, dtype=np.int32 if len(grid) < 2**31 - 1 else np.int64)
    cv = _prefix(~np.isnan(grid), prefix)
    n_valid_input = cv[h0] - cv[start]
    n_valid_horizon = cv[h0 + hb] - cv[h0]
    with np.errstate(invalid="ignore"):
        below = grid < s.threshold  # NaN compares False: a missing bin is never below
    cb = _prefix(below, prefix)
    del below
    in_progress = (cb[h0] - cb[h0 - s.in_progress_bins]) == s.in_progress_bins
    e = s.event_bins
    run_at = (cb[e:] - cb[:-e]) == e  # run_at[i]: bins i..i+e-1 all valid and below threshold
    enough_input = n_valid_input >= s.min_valid_input_bins
    enough_horizon = n_valid_horizon >= s.min_valid_horizon_bins
    keep = enough_input & enough_horizon & ~in_progress

    cr = _prefix(run_at, prefix)
    del run_at
    kept_h0 = h0[keep]
    label = (cr[kept_h0 + hb - e + 1] - cr[kept_h0]) > 0

    kept_start = start[keep]
    inputs = (
        np.lib.stride_tricks.sliding_window_view(grid, ib)[kept_start]
        if len(kept_start)
        else np.zeros((0, ib), np.float32)
    )
    return WindowArrays(
        case_index=case_index[keep],
        t=t[keep],
        label=label.astype(np.int8),
        inputs=np.ascontiguousarray(inputs, dtype=np.float32),
        n_candidates=int(len(start)),
        dropped_input=int((~enough_input).sum()),
        dropped_horizon=int((enough_input & ~enough_horizon).sum()),
        dropped_in_progress=int((enough_input & enough_horizon & in_progress).sum()),
    )


def windows_from_readings(
    caseids: np.ndarray,
    opstart: np.ndarray,
    opend: np.ndarray,
    reading_caseid: np.ndarray,
    reading_time: np.ndarray,
    reading_value: np.ndarray,
    settings: IohSettings,
) -> WindowArrays:
    """In-memory entry point: cohort arrays plus readings (sorted by caseid, time) to kept windows."""
    layout = case_layout(opstart, opend, settings)
    builder = GridBuilder(caseids, layout, settings)
    builder.add(np.asarray(reading_caseid), np.asarray(reading_time, dtype=np.float64), np.asarray(reading_value))
    return windows_from_grid(builder.finish(), layout, settings)
