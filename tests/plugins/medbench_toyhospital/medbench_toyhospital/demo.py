"""The demo stand-in for Toy Hospital: generated admissions and lab events, in the source's own format.

The format is that of a hospital data extract (MIMIC-IV ``hosp`` style): ``admissions.csv`` (one
row per admission: ``hadm_id, subject_id, age, sex, admittime, dischtime, transfusion_time``, the
last empty when no red-cell transfusion was given) and ``labevents.csv`` (one row per result:
``labevent_id, subject_id, hadm_id, itemid, charttime, valuenum, valueuom``; itemids 51222
haemoglobin g/dL, 51265 platelets K/uL, 50912 creatinine mg/dL). The loader (``source.py``) reads
exactly these files, from the demo folder or from a real extract.

Synthetic and seeded: patients (1 to 3 admissions each) have a haemoglobin level that drifts down
in those who bleed; a transfusion after hour 48 is likelier the lower and the faster falling the
haemoglobin. Same seed, same bytes.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

import numpy as np

HEMOGLOBIN, PLATELETS, CREATININE = 51222, 51265, 50912
N_PATIENTS = 140
START = dt.datetime(2031, 1, 1, 8, 0)


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def write_demo_toyhospital(folder: Path, seed: int) -> None:
    """Write ``admissions.csv`` and ``labevents.csv`` into ``folder``."""
    rng = np.random.default_rng(seed)
    admissions, labs = [], []
    hadm, event = 20_000_000, 0
    for p in range(N_PATIENTS):
        subject = 10_000_000 + p
        sex = "F" if rng.random() < 0.5 else "M"
        age = int(rng.integers(18, 91))
        bleeder = rng.random() < 0.35
        for k in range(int(rng.integers(1, 4))):
            hadm += 1
            admit = START + dt.timedelta(days=int(rng.integers(0, 700)), minutes=int(rng.integers(0, 1440)))
            base = rng.normal(13.4 if sex == "M" else 12.2, 1.6)
            slope = rng.normal(-0.09, 0.04) if (bleeder and rng.random() < 0.7) else rng.normal(0.0, 0.01)
            last = base
            for h in range(0, 48, 6):
                charttime = admit + dt.timedelta(hours=h, minutes=int(rng.integers(0, 300)))
                hours = (charttime - admit).total_seconds() / 3600
                last = max(3.5, base + slope * hours + rng.normal(0, 0.35))
                if rng.random() < 0.12:
                    continue  # a result not drawn (a missing bin)
                event += 1
                labs.append((event, subject, hadm, HEMOGLOBIN, _stamp(charttime), f"{last:.1f}", "g/dL"))
                if h % 12 == 0:
                    event += 1
                    labs.append((event, subject, hadm, PLATELETS, _stamp(charttime),
                                 f"{max(20.0, rng.normal(230, 60)):.0f}", "K/uL"))
                    event += 1
                    labs.append((event, subject, hadm, CREATININE, _stamp(charttime),
                                 f"{max(0.3, rng.normal(1.0, 0.3)):.2f}", "mg/dL"))
            risk = 1 / (1 + np.exp(-(0.3 - 1.1 * (last - 9.0) - 8.0 * slope)))
            transfused = ""
            if rng.random() < risk:
                transfused = _stamp(admit + dt.timedelta(hours=float(rng.uniform(49, 120))))
            stay = dt.timedelta(hours=float(rng.uniform(130, 400)))
            admissions.append((hadm, subject, age, sex, _stamp(admit), _stamp(admit + stay), transfused))
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder / "admissions.csv", ["hadm_id", "subject_id", "age", "sex", "admittime", "dischtime",
                                       "transfusion_time"], admissions)
    _write(folder / "labevents.csv", ["labevent_id", "subject_id", "hadm_id", "itemid", "charttime", "valuenum",
                                      "valueuom"], labs)


def _write(path: Path, header: list[str], rows: list[tuple]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
