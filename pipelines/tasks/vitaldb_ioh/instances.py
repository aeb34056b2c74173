"""vitaldb-ioh: the windows Parquet of a task version: built from a snapshot (cohort -> grid ->
windows -> split), written atomically, and read back per split as (meta, float32 inputs)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import msgspec
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.tasks.vitaldb_ioh.cohort import read_cohort_with_flow
from pipelines.tasks.vitaldb_ioh.grid import GridBuilder, case_layout, check_settings
from pipelines.tasks.vitaldb_ioh.settings import IohSettings
from pipelines.tasks.vitaldb_ioh.split import SPLITS, Split, split_codes
from pipelines.tasks.vitaldb_ioh.windows import WindowArrays, windows_from_grid
from medbench.files import atomic_path, atomic_write_bytes

_READ_BATCH_ROWS = 2_000_000


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
    n_snapshot_cases: int = 0
    exclusions: list[dict] = field(default_factory=list)  # {reason, cases}, in the order applied

    def as_dict(self) -> dict:
        return asdict(self)

    def participant_flow(self) -> dict:
        """Cases in the snapshot -> each exclusion -> cohort -> windows -> splits (TRIPOD+AI 20a)."""
        return {
            "snapshot_cases": self.n_snapshot_cases,
            "exclusions": list(self.exclusions),
            "cohort_cases": self.n_cohort_cases,
            "cohort_subjects": self.n_cohort_subjects,
            "candidate_windows": self.n_candidates,
            "dropped_windows": [
                {"reason": "too few valid input bins", "windows": self.dropped_input},
                {"reason": "too few valid horizon bins", "windows": self.dropped_horizon},
                {"reason": "hypotension already in progress", "windows": self.dropped_in_progress},
            ],
            "windows": self.n_windows,
            "cases_with_windows": self.n_cases,
            "subjects_with_windows": self.n_subjects,
            "splits": {k: asdict(v) for k, v in self.splits.items()},
        }


def flow_steps(flow: dict) -> list[dict]:
    """The flow file's counts as the published participant flow: labelled counts in order
    (``medbench.figures.FlowStep``), exclusions and splits one level in."""
    steps = [{"label": "cases in the snapshot", "count": flow["snapshot_cases"], "unit": "cases", "level": 0}]
    steps += [{"label": f"excluded: {e['reason']}", "count": e["cases"], "unit": "cases", "level": 1}
              for e in flow.get("exclusions", [])]
    steps.append({"label": "cohort", "count": flow["cohort_cases"], "unit": "cases", "level": 0,
                  "note": f"{flow['cohort_subjects']} subjects"})
    steps.append({"label": "candidate windows", "count": flow["candidate_windows"], "unit": "windows", "level": 0})
    steps += [{"label": f"dropped: {d['reason']}", "count": d["windows"], "unit": "windows", "level": 1}
              for d in flow.get("dropped_windows", [])]
    steps.append({"label": "windows", "count": flow["windows"], "unit": "windows", "level": 0,
                  "note": f"from {flow['cases_with_windows']} cases of {flow['subjects_with_windows']} subjects"})
    steps += [{"label": name, "count": s["windows"], "unit": "windows", "level": 1,
               "note": f"{s['subjects']} subjects, prevalence {s['prevalence']:.3f}"}
              for name, s in flow.get("splits", {}).items()]
    return steps


def flow_path(instances: Path) -> Path:
    """The participant flow written beside the windows file (published with the task)."""
    return Path(instances).with_name(Path(instances).stem + ".flow.json")


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
            pa.field("sex", pa.string(), nullable=True),  # the case's, for the subgroups (M, F or null)
            pa.field("age", pa.float32(), nullable=True),
            pa.field("input", pa.list_(item, settings.input_bins), nullable=False),
        ]
    )


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
    cohort, exclusions, n_snapshot_cases = read_cohort_with_flow(snapshot_dir, settings)
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
    table = _windows_table(cohort, caseids, subjectids, codes, windows, settings)
    _write_atomically(table, out_path)
    summary = replace(_summarise(cohort, caseids, subjectids, codes, windows),
                      n_snapshot_cases=n_snapshot_cases, exclusions=exclusions)
    atomic_write_bytes(flow_path(out_path), msgspec.json.encode(summary.participant_flow()))
    log(
        f"vitaldb-ioh windows: kept {summary.n_windows} of {summary.n_candidates} "
        f"(dropped: {summary.dropped_input} input, {summary.dropped_horizon} horizon, "
        f"{summary.dropped_in_progress} in progress); "
        + ", ".join(f"{k} {v.windows} ({v.prevalence:.3f} positive)" for k, v in summary.splits.items())
    )
    return summary


def _windows_table(cohort: pl.DataFrame, caseids, subjectids, codes, windows: WindowArrays,
                   settings: IohSettings) -> pa.Table:
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
            pa.array(cohort["sex"].to_numpy()[windows.case_index] if cohort.height else [], pa.string()),
            pa.array(cohort["age"].to_numpy()[windows.case_index] if cohort.height else [], pa.float32(),
                     from_pandas=True),
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
