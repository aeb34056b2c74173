"""A generated VitalDB API folder, so the whole vitaldb-ioh chain runs without patient data.

The folder has exactly the layout and file formats of the real open-data API (see
``shared/samples/vitaldb-mirror``): gzip CSV ``cases`` and ``trks`` and one gzip CSV per track id.
What it holds is chosen to exercise every branch of the task definition, not to look pretty:
readings at ~2 s with jitter (so some 2-s bins get two readings and some none), gaps, artifacts
outside [20, 200] mmHg and single spikes, hypotensive episodes shorter and longer than 60 s,
patients with several cases, and cases the cohort must leave out (children, non-general
anaesthesia, transplants in mixed case, arterial pressure only on ``EV1000/ART_MBP``, no arterial
line). Output is byte-identical for a given seed (gzip mtime 0, no file name in the header).

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ART = "Solar8000/ART_MBP"
EV1000 = "EV1000/ART_MBP"
HR = "Solar8000/HR"

CASE_COLUMNS = [
    "caseid", "subjectid", "casestart", "caseend", "anestart", "aneend", "opstart", "opend",
    "age", "sex", "height", "weight", "bmi", "asa", "emop", "department", "optype", "dx",
    "opname", "approach", "position", "ane_type",
]  # fmt: skip

_OPERATIONS = [
    ("General surgery", "Colorectal", "Rectal cancer", "Low anterior resection", "Open", "Lithotomy"),
    ("General surgery", "Stomach", "Stomach cancer", "Distal gastrectomy", "Videoscopic", "Supine"),
    (
        "General surgery",
        "Biliary/Pancreas",
        "Pancreatic cancer",
        "Pylorus-preserving pancreaticoduodenectomy",
        "Open",
        "Supine",
    ),
    ("General surgery", "Hepatic", "Hepatocellular carcinoma", "Hemihepatectomy, right", "Open", "Supine"),
    ("Thoracic surgery", "Lung", "Lung cancer", "Lobectomy", "Videoscopic", "Lateral decubitus"),
    ("Urology", "Urology", "Prostate cancer", "Radical prostatectomy", "Robotic", "Lithotomy"),
    ("Gynecology", "Gynecology", "Uterine myoma", "Total laparoscopic hysterectomy", "Videoscopic", "Lithotomy"),
    ("General surgery", "Vascular", "Abdominal aortic aneurysm", "Aneurysm repair", "Open", "Supine"),
]
_TRANSPLANTS = [
    ("General surgery", "Transplantation", "Liver cirrhosis", "Liver Transplantation", "Open", "Supine"),
    (
        "General surgery",
        "Transplantation",
        "End stage renal disease",
        "living donor kidney TRANSPLANT",
        "Open",
        "Supine",
    ),
]


@dataclass
class _Case:
    caseid: int
    subjectid: int
    age: float
    ane_type: str
    operation: tuple[str, str, str, str, str, str]
    tracks: list[str]
    sex: str = "M"
    times: dict[str, int] = field(default_factory=dict)


def write_demo_vitaldb(folder: Path, seed: int = 7, n_cases: int = 80) -> None:
    """Write ``cases``, ``trks`` and one ``<tid>`` file per track into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    cases = _plan_cases(rng, n_cases)
    trks: list[tuple[int, str, str]] = []
    used_tids: set[str] = set()
    for case in cases:
        _plan_times(rng, case)
        for tname in case.tracks:
            tid = _new_tid(rng, used_tids)
            trks.append((case.caseid, tname, tid))
            times, values = _track_series(rng, case, tname)
            _write_gzip(folder / tid, _track_csv(tname, times, values, integer=(tname == HR)))
    _write_gzip(folder / "cases", _cases_csv(rng, cases))
    _write_gzip(folder / "trks", _rows_csv(["caseid", "tname", "tid"], trks))


# --------------------------------------------------------------------------- which cases


def _plan_cases(rng: np.random.Generator, n_cases: int) -> list[_Case]:
    """Cohort cases plus a fixed menu of cases the cohort filter must reject (or, at 18, keep)."""
    special = [
        {"age": 8.0}, {"age": 17.0}, {"age": 18.0},
        {"ane_type": "Spinal"}, {"ane_type": "Sedationalgesia"},
        {"operation": _TRANSPLANTS[0]}, {"operation": _TRANSPLANTS[1]},
        {"tracks": [EV1000, HR]}, {"tracks": [EV1000]}, {"tracks": [ART, EV1000, HR]}, {"tracks": [HR]},
    ]  # fmt: skip
    if n_cases < len(special) + 4:
        raise ValueError(f"n_cases must be at least {len(special) + 4}")
    kinds: list[dict] = special + [{}] * (n_cases - len(special))
    kinds = [kinds[i] for i in rng.permutation(len(kinds))]

    # About one patient in six has two or three cases.
    subjects: list[int] = []
    pool = rng.choice(np.arange(1000, 7000), size=n_cases, replace=False)
    for sid in pool:
        repeat = 1 + int(rng.random() < 0.17) + int(rng.random() < 0.04)
        subjects.extend([int(sid)] * repeat)
        if len(subjects) >= n_cases:
            break
    subjects = subjects[:n_cases]

    cases = []
    for i, kind in enumerate(kinds):
        tracks = kind.get("tracks", [ART, HR] if rng.random() < 0.7 else [ART])
        op = kind.get("operation", _OPERATIONS[int(rng.integers(len(_OPERATIONS)))])
        cases.append(
            _Case(
                caseid=i + 1,
                subjectid=subjects[i],
                age=kind.get("age", float(rng.integers(19, 88))),
                ane_type=kind.get("ane_type", "General"),
                operation=op,
                tracks=list(tracks),
                sex="M" if rng.random() < 0.55 else "F",
            )
        )
    # A patient's cases share age and sex (give or take the years between them).
    first: dict[int, _Case] = {}
    for case in cases:
        if case.subjectid in first and "age" not in kinds[case.caseid - 1]:
            case.age, case.sex = first[case.subjectid].age, first[case.subjectid].sex
        first.setdefault(case.subjectid, case)
    return cases


def _plan_times(rng: np.random.Generator, case: _Case) -> None:
    opstart = int(rng.integers(300, 1500))
    opend = opstart + int(rng.integers(40 * 60, 130 * 60))
    caseend = opend + int(rng.integers(300, 1200))
    case.times = {
        "casestart": 0,
        "caseend": caseend,
        "anestart": -int(rng.integers(60, 600)),
        "aneend": caseend + int(rng.integers(0, 300)),
        "opstart": opstart,
        "opend": opend,
    }


def _new_tid(rng: np.random.Generator, used: set[str]) -> str:
    while True:
        tid = rng.bytes(8).hex()
        if tid not in used:
            used.add(tid)
            return tid


# --------------------------------------------------------------------------- signals


def _reading_times(rng: np.random.Generator, start: float, end: float, step: float) -> np.ndarray:
    """Irregular sampling at ~``step`` s: jitter, occasional double readings, gaps with no rows."""
    n = int((end - start) / step * 1.1) + 10
    steps = np.clip(rng.normal(step, 0.12 * step, n), 0.55 * step, 1.5 * step)
    doubles = rng.random(n) < 0.03
    steps[doubles] = rng.uniform(0.2, 0.7, doubles.sum()) * step
    gaps = rng.random(n) < 0.0008
    steps[gaps] += rng.choice([12.0, 40.0, 90.0, 200.0, 420.0], gaps.sum())
    times = start + np.cumsum(steps)
    times = np.round(times[times < end], 3)
    return times[np.concatenate([[True], np.diff(times) > 0])]


def _smooth_noise(rng: np.random.Generator, n: int, width: int, scale: float) -> np.ndarray:
    kernel = np.exp(-0.5 * (np.arange(-3 * width, 3 * width + 1) / width) ** 2)
    kernel /= np.sqrt((kernel**2).sum())
    return np.convolve(rng.normal(0, scale, n + len(kernel)), kernel, mode="same")[:n]


def _map_series(rng: np.random.Generator, case: _Case, times: np.ndarray) -> np.ndarray:
    """Mean arterial pressure: baseline, slow drift, hypotensive episodes of varied length, noise."""
    n = len(times)
    values = rng.uniform(70, 90) + _smooth_noise(rng, n, 150, 1.2) + rng.normal(0, 1.3, n)
    opstart, opend = case.times["opstart"], case.times["opend"]
    # Post-induction dips before incision are common; then episodes scattered through the operation.
    # Most drift down over minutes (what makes them predictable); some drop within seconds.
    starts = [opstart - rng.uniform(120, 600)] if rng.random() < 0.5 else []
    starts += list(rng.uniform(opstart, opend, int(rng.poisson(2.6))))
    for start in starts:
        plateau = float(np.exp(rng.uniform(np.log(15), np.log(540))))
        fall = rng.uniform(90, 420) if rng.random() < 0.8 else rng.uniform(10, 40)
        rise = rng.uniform(20, 120)
        floor = rng.uniform(48, 66)
        depth = np.clip(
            np.minimum((times - start) / fall, 1 + (start + fall + plateau - times) / rise),
            0,
            1,
        )
        values = values - depth * np.maximum(values - floor, 0)
    # Artifacts: flushes and zeroing (runs beyond the valid range) and single spikes.
    for _ in range(int(rng.poisson(3))):
        at = int(rng.integers(n))
        run = int(rng.integers(3, 25))
        values[at : at + run] = rng.choice([rng.uniform(0, 19), rng.uniform(201, 320)])
    spikes = rng.random(n) < 0.002
    values[spikes] = rng.choice([5.0, 12.0, 240.0, 300.0], spikes.sum())
    return np.round(values, 1)


def _track_series(rng: np.random.Generator, case: _Case, tname: str) -> tuple[np.ndarray, np.ndarray]:
    start = float(rng.uniform(0, 120))
    end = float(case.times["caseend"] - rng.uniform(0, 180))
    if tname == ART:
        times = _reading_times(rng, start, end, 2.0)
        return times, _map_series(rng, case, times)
    if tname == EV1000:
        times = np.arange(start // 20 * 20, end, 20.0)
        return times, np.round(rng.uniform(70, 90) + _smooth_noise(rng, len(times), 5, 2.0), 1)
    times = np.arange(0, end, 2.0)
    return times, np.round(rng.uniform(60, 85) + _smooth_noise(rng, len(times), 40, 3.0))


# --------------------------------------------------------------------------- files


def _fmt_time(t: float) -> str:
    text = f"{t:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def _track_csv(tname: str, times: np.ndarray, values: np.ndarray, integer: bool) -> bytes:
    if integer:
        body = "\n".join(f"{_fmt_time(t)},{int(v)}" for t, v in zip(times.tolist(), values.tolist(), strict=True))
    else:
        body = "\n".join(f"{_fmt_time(t)},{v:.1f}" for t, v in zip(times.tolist(), values.tolist(), strict=True))
    return f"Time,{tname}\n{body}\n".encode()


def _cases_csv(rng: np.random.Generator, cases: list[_Case]) -> bytes:
    rows = []
    for case in cases:
        department, optype, dx, opname, approach, position = case.operation
        height = float(np.round(rng.normal(170 if case.sex == "M" else 158, 7), 1))
        if case.age < 18:
            height = float(np.round(110 + 3.5 * case.age, 1))
        weight = float(np.round(rng.normal(70 if case.sex == "M" else 58, 10) * (1 if case.age >= 18 else 0.6), 1))
        bmi = round(weight / (height / 100) ** 2, 1)
        asa = "" if rng.random() < 0.05 else int(rng.integers(1, 4))
        t = case.times
        age = int(case.age)
        rows.append(
            [case.caseid, case.subjectid, t["casestart"], t["caseend"], t["anestart"], t["aneend"],
             t["opstart"], t["opend"], age, case.sex, height, weight, bmi, asa, int(rng.random() < 0.1),
             department, optype, dx, opname, approach, position, case.ane_type]
        )  # fmt: skip
    return _rows_csv(CASE_COLUMNS, rows)


def _rows_csv(header: list[str], rows: list) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def _write_gzip(path: Path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data, compresslevel=6, mtime=0))
