"""vitaldb-ioh: the settings' arithmetic, each case's prediction times, and the flat 2-second grid.

Every case's grid lives in one flat array (one contiguous segment per case, exactly as long as its
windows need); bin k holds the readings with time in [k*bin, (k+1)*bin) s from case start, the last
reading in a bin wins, then a value < valid_min or > valid_max makes the bin missing (NaN).
Prediction times T are the multiples of stride_seconds with T - input >= opstart and
T + horizon <= opend.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipelines.tasks.vitaldb_ioh.settings import IohSettings

_LOOKUP_TABLE_MAX_ID = 50_000_000


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
    r = settings.reporting
    for name, values in (("thresholds", r.thresholds), ("alarm_rates", r.alarm_rates)):
        if not all(0 < v < 1 for v in values):
            raise ValueError(f"ioh settings: every reporting.{name} value must be strictly between 0 and 1")
    if list(r.age_bands) != sorted(set(r.age_bands)) or any(a < 0 for a in r.age_bands):
        raise ValueError("ioh settings: reporting.age_bands must be increasing non-negative ages")
    if r.calibration_bins < 2:
        raise ValueError("ioh settings: reporting.calibration_bins must be at least 2")


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
