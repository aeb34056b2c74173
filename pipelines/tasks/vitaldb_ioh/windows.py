"""vitaldb-ioh@0: cohort, 2-second grid, prediction windows, labels and the subject split.

Every number comes from the task's ``IohSettings`` so that a task version file, not this code,
decides what a score means. Windowing runs over *whole cases at once* with numpy: every case's
grid lives in one flat array (one contiguous segment per case, exactly as long as its windows
need), and every window statistic (valid bins, the in-progress rule, the >= 30-bin run below
threshold) is a difference of prefix sums over that array. No Python loop runs per window or per
case, which is what lets 1.9 million windows be built from ~30 million readings in seconds.

Definitions (DESIGN.md, "vitaldb-ioh@0"), with every constant taken from the settings:

* bin k holds the readings with time in [k*bin, (k+1)*bin) s from case start; the last reading in
  a bin wins; then a value < valid_min or > valid_max makes the bin missing (NaN);
* prediction times T are the multiples of stride_seconds with T - input >= opstart and
  T + horizon <= opend; input = the bins of [T - input, T), horizon = the bins of [T, T + horizon);
* a window is kept iff it has >= min_valid_input_bins valid input bins and >= min_valid_horizon_bins
  valid horizon bins, and its last in_progress_bins input bins are not all valid and < threshold;
* label 1 iff the horizon has >= event_bins consecutive valid bins all < threshold.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.engine.specs import IohSettings
from warehouse.files import atomic_path

Split = Literal["test", "validation", "train"]
SPLITS: tuple[Split, ...] = ("test", "validation", "train")
_READ_BATCH_ROWS = 2_000_000
_LOOKUP_TABLE_MAX_ID = 50_000_000


# --------------------------------------------------------------------------- settings


def check_settings(settings: IohSettings) -> None:
    """Refuse settings the grid arithmetic cannot honour exactly (a clear error beats a silent shift)."""
    b = settings.bin_seconds
    for name in ("input_seconds", "horizon_seconds", "stride_seconds"):
        value = getattr(settings, name)
        if value <= 0 or value % b:
            raise ValueError(f"ioh settings: {name} = {value} must be a positive multiple of bin_seconds = {b}")
    if not 0 < settings.in_progress_bins <= settings.input_bins:
        raise ValueError("ioh settings: in_progress_bins must be in 1..input_bins")
    if not 0 < settings.event_bins <= settings.horizon_bins:
        raise ValueError("ioh settings: event_bins must be in 1..horizon_bins")
    if not 0 <= settings.test_below <= settings.validation_below <= 100:
        raise ValueError("ioh settings: need 0 <= test_below <= validation_below <= 100")


# --------------------------------------------------------------------------- split


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


# --------------------------------------------------------------------------- cohort


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


# --------------------------------------------------------------------------- grid and windows


@dataclass(frozen=True)
class CaseLayout:
    """Where each case's windows and grid segment lie in the flat arrays."""

    first_t: np.ndarray  # int64 seconds, first prediction time (valid where n_times > 0)
    n_times: np.ndarray  # int64, number of prediction times
    first_bin: np.ndarray  # int64, absolute bin index of the segment start
    seg_len: np.ndarray  # int64, bins in the segment
    seg_start: np.ndarray  # int64, offset of the segment in the flat grid

    @property
    def n_bins(self) -> int:
        return int(self.seg_len.sum())


def case_layout(opstart: np.ndarray, opend: np.ndarray, settings: IohSettings) -> CaseLayout:
    """Prediction times per case: multiples of stride with T - input >= opstart, T + horizon <= opend."""
    check_settings(settings)
    stride, b = settings.stride_seconds, settings.bin_seconds
    opstart = np.asarray(opstart, dtype=np.float64)
    opend = np.asarray(opend, dtype=np.float64)
    known = np.isfinite(opstart) & np.isfinite(opend)
    lo = np.ceil((np.where(known, opstart, 0.0) + settings.input_seconds) / stride).astype(np.int64) * stride
    hi = np.floor((np.where(known, opend, 0.0) - settings.horizon_seconds) / stride).astype(np.int64) * stride
    n_times = np.where(known & (hi >= lo), (hi - lo) // stride + 1, 0).astype(np.int64)
    first_bin = (lo - settings.input_seconds) // b
    span = settings.input_bins + settings.horizon_bins
    seg_len = np.where(n_times > 0, (n_times - 1) * (stride // b) + span, 0).astype(np.int64)
    seg_start = np.concatenate([[0], np.cumsum(seg_len)[:-1]]).astype(np.int64)
    return CaseLayout(first_t=lo, n_times=n_times, first_bin=first_bin, seg_len=seg_len, seg_start=seg_start)


class GridBuilder:
    """Fills the flat 2-second grid from readings fed in (caseid, time) order, batch by batch.

    Readings must arrive sorted by caseid then time (the snapshot's order); within one bin the
    last one fed wins, across batches too, because later batches overwrite earlier ones.
    Per reading: flat bin = floor(time / bin) + (segment start - first bin of its case), kept when
    it falls inside its case's segment. Per-case constants carry one extra sentinel entry (an
    empty segment) so that readings of cases outside the cohort (index -1) fall out on their own.
    """

    def __init__(self, caseids: np.ndarray, layout: CaseLayout, settings: IohSettings):
        self._bin = float(settings.bin_seconds)
        self._valid = (settings.valid_min, settings.valid_max)
        self.grid = np.full(layout.n_bins, np.nan, dtype=np.float32)
        caseids = np.asarray(caseids, dtype=np.int64)
        self._caseids = caseids
        seg_lo = layout.seg_start.astype(np.float64)
        self._shift = np.append(seg_lo - layout.first_bin, 0.0)
        self._lo = np.append(seg_lo, np.inf)
        self._hi = np.append(seg_lo + layout.seg_len, -np.inf)
        self._lookup: np.ndarray | None = None
        if len(caseids) and caseids.min() >= 0 and caseids.max() < _LOOKUP_TABLE_MAX_ID:
            self._lookup = np.full(int(caseids.max()) + 2, -1, dtype=np.int32)
            self._lookup[caseids] = np.arange(len(caseids), dtype=np.int32)

    def _case_index(self, caseid: np.ndarray) -> np.ndarray:
        if self._lookup is not None:
            return self._lookup[np.clip(caseid, -1, len(self._lookup) - 1)]
        pos = np.minimum(np.searchsorted(self._caseids, caseid), max(len(self._caseids) - 1, 0))
        return np.where(self._caseids[pos] == caseid, pos, -1).astype(np.int32)

    def add(self, caseid: np.ndarray, time: np.ndarray, value: np.ndarray) -> None:
        if len(caseid) == 0 or len(self._caseids) == 0:
            return
        idx = self._case_index(np.asarray(caseid))
        flat = np.floor_divide(np.asarray(time, dtype=np.float64), self._bin)
        flat += self._shift[idx]
        inside = (flat >= self._lo[idx]) & (flat < self._hi[idx])
        flat = flat[inside].astype(np.int64)
        value = np.asarray(value)[inside]
        if len(flat) > 1 and np.any(flat[1:] < flat[:-1]):
            raise ValueError("readings must be sorted by caseid then time")
        last = np.ones(len(flat), dtype=bool)
        np.not_equal(flat[1:], flat[:-1], out=last[:-1])
        self.grid[flat[last]] = value[last]

    def finish(self) -> np.ndarray:
        """The grid with out-of-range bins set to NaN (missing)."""
        low, high = self._valid
        with np.errstate(invalid="ignore"):
            invalid = ~((self.grid >= low) & (self.grid <= high))
        self.grid[invalid] = np.nan
        return self.grid


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


# --------------------------------------------------------------------------- Parquet in and out


@dataclass(frozen=True)
class SplitSummary:
    windows: int
    positives: int
    prevalence: float
    cases: int
    subjects: int


@dataclass(frozen=True)
class WindowsSummary:
    n_cohort_cases: int
    n_cohort_subjects: int
    n_candidates: int
    dropped_input: int
    dropped_horizon: int
    dropped_in_progress: int
    n_windows: int
    n_cases: int
    n_subjects: int
    splits: dict[str, SplitSummary] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def windows_schema(settings: IohSettings) -> pa.Schema:
    item = pa.field("item", pa.float32(), nullable=False)
    return pa.schema(
        [
            pa.field("instance_id", pa.string(), nullable=False),
            pa.field("caseid", pa.int32(), nullable=False),
            pa.field("subjectid", pa.int32(), nullable=False),
            pa.field("t", pa.int32(), nullable=False),
            pa.field("split", pa.string(), nullable=False),
            pa.field("label", pa.int8(), nullable=False),
            pa.field("input", pa.list_(item, settings.input_bins), nullable=False),
        ]
    )


def _read_cohort(snapshot_dir: Path, settings: IohSettings) -> pl.DataFrame:
    cases = pl.read_parquet(snapshot_dir / "cases.parquet")
    tracks = pl.read_parquet(snapshot_dir / "tracks.parquet")
    return select_cohort(cases, tracks, settings)


def build_windows(
    snapshot_dir: Path, settings: IohSettings, out_path: Path, log: Callable[[str], None] = print
) -> WindowsSummary:
    """Snapshot Parquet (cases, tracks, readings) -> windows Parquet; returns counts per split.

    Readings are streamed in row batches into the grid, so the whole readings table is never held
    at once. The output is written to a temporary name and renamed, so a crash never leaves a
    half-written windows file behind.
    """
    snapshot_dir, out_path = Path(snapshot_dir), Path(out_path)
    check_settings(settings)
    cohort = _read_cohort(snapshot_dir, settings)
    caseids = cohort["caseid"].to_numpy().astype(np.int64)
    subjectids = cohort["subjectid"].to_numpy().astype(np.int64)
    layout = case_layout(cohort["opstart"].to_numpy(), cohort["opend"].to_numpy(), settings)
    n_candidates = int(layout.n_times.sum())
    log(
        f"vitaldb-ioh windows: {len(caseids)} cohort cases, {n_candidates} candidate windows, {layout.n_bins} grid bins"
    )

    builder = GridBuilder(caseids, layout, settings)
    readings = pq.ParquetFile(snapshot_dir / "readings.parquet")
    for batch in readings.iter_batches(batch_size=_READ_BATCH_ROWS, columns=["caseid", "time", "value"]):
        builder.add(
            batch.column("caseid").to_numpy(),
            batch.column("time").to_numpy(),
            batch.column("value").to_numpy(),
        )
    windows = windows_from_grid(builder.finish(), layout, settings)
    del builder

    case_codes = split_codes(subjectids, settings) if len(subjectids) else np.zeros(0, np.int8)
    codes = case_codes[windows.case_index]
    table = _windows_table(caseids, subjectids, codes, windows, settings)
    _write_atomically(table, out_path)
    summary = _summarise(cohort, caseids, subjectids, codes, windows)
    log(
        f"vitaldb-ioh windows: kept {summary.n_windows} of {summary.n_candidates} "
        f"(dropped: {summary.dropped_input} input, {summary.dropped_horizon} horizon, "
        f"{summary.dropped_in_progress} in progress); "
        + ", ".join(f"{k} {v.windows} ({v.prevalence:.3f} positive)" for k, v in summary.splits.items())
    )
    return summary


def _windows_table(caseids, subjectids, codes, windows: WindowArrays, settings: IohSettings) -> pa.Table:
    caseid = pa.array(caseids[windows.case_index].astype(np.int32))
    t = pa.array(windows.t.astype(np.int32))
    colon = pa.scalar(":")
    instance_id = pc.binary_join_element_wise(caseid.cast(pa.string()), t.cast(pa.string()), colon)
    split = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(list(SPLITS))).cast(pa.string())
    flat = pa.array(windows.inputs.reshape(-1), type=pa.float32())
    schema = windows_schema(settings)
    inputs = pa.FixedSizeListArray.from_arrays(flat, type=schema.field("input").type)
    return pa.Table.from_arrays(
        [
            instance_id,
            caseid,
            pa.array(subjectids[windows.case_index].astype(np.int32)),
            t,
            split,
            pa.array(windows.label, type=pa.int8()),
            inputs,
        ],
        schema=schema,
    )


def _write_atomically(table: pa.Table, out_path: Path) -> None:
    # zstd: consecutive windows of a case overlap by 90%, so the inputs compress ~10x, and polars'
    # writer encodes the 150-float lists several times faster than pyarrow's.
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    with atomic_path(out_path) as tmp:
        frame.write_parquet(tmp, compression="zstd", compression_level=1, statistics=False, row_group_size=256 * 1024)


def _summarise(cohort: pl.DataFrame, caseids, subjectids, codes, windows: WindowArrays) -> WindowsSummary:
    splits: dict[str, SplitSummary] = {}
    for code, name in enumerate(SPLITS):
        mine = codes == code
        n = int(mine.sum())
        pos = int(windows.label[mine].sum())
        splits[name] = SplitSummary(
            windows=n,
            positives=pos,
            prevalence=pos / n if n else math.nan,
            cases=int(len(np.unique(windows.case_index[mine]))),
            subjects=int(len(np.unique(subjectids[windows.case_index[mine]]))),
        )
    return WindowsSummary(
        n_cohort_cases=int(cohort.height),
        n_cohort_subjects=int(cohort["subjectid"].n_unique()) if cohort.height else 0,
        n_candidates=windows.n_candidates,
        dropped_input=windows.dropped_input,
        dropped_horizon=windows.dropped_horizon,
        dropped_in_progress=windows.dropped_in_progress,
        n_windows=int(len(windows.t)),
        n_cases=int(len(np.unique(windows.case_index))),
        n_subjects=int(len(np.unique(subjectids[windows.case_index]))),
        splits=splits,
    )


def read_windows(path: Path, split: Split | None = None) -> tuple[pl.DataFrame, np.ndarray]:
    """(meta without the input column, inputs float32 [n, input_bins]) for one split or all."""
    filters = [("split", "=", split)] if split else None
    table = pq.read_table(path, filters=filters)
    column = table.column("input")
    width = column.type.list_size
    chunks = [chunk.flatten().to_numpy(zero_copy_only=False) for chunk in column.chunks]
    values = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    inputs = values.astype(np.float32, copy=False).reshape(-1, width)
    meta = pl.from_arrow(table.drop_columns(["input"]))
    assert isinstance(meta, pl.DataFrame)
    return meta, inputs


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
