"""The ward extract in FHIR R4 bulk-data form (NDJSON: one resource per line), written and read.

Files: ``Patient.ndjson`` (``resourceType: Patient``, ``id``, ``gender``, ``birthDate``) and
``Observation.ndjson`` (``resourceType: Observation``, ``status: final``, ``code.coding`` with LOINC
``2823-3`` "Potassium [Moles/volume] in Serum or Plasma", ``subject.reference: Patient/<id>``,
``effectiveDateTime``, ``valueQuantity {value, unit: mmol/L}``), as a FHIR server's ``$export``
writes them. The reader keeps final potassium observations of known patients and writes a
content-addressed snapshot (``observations.parquet``: patient_id, time, value; ``patients.parquet``).

The demo stand-in is generated (seeded, same seed same bytes): each patient has a level that drifts
(a random walk around their own mean, pulled back towards it), measured with noise, so the last
value, a mean of recent values and a damped trend forecast differ in accuracy.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from warehouse.files import atomic_directory

LOINC_POTASSIUM = "2823-3"
FILES = ("Patient.ndjson", "Observation.ndjson")
START = dt.datetime(2031, 3, 1, 6, 0, tzinfo=dt.timezone.utc)


class FhirError(ValueError):
    """The export is missing a file or holds a malformed resource; the message says which line."""


def write_demo_export(folder: Path, seed: int, n_patients: int = 90) -> None:
    """Write ``Patient.ndjson`` and ``Observation.ndjson`` into ``folder``."""
    rng = np.random.default_rng(seed)
    patients, observations = [], []
    obs_id = 0
    for p in range(n_patients):
        pid = f"pt{p:04d}"
        patients.append({"resourceType": "Patient", "id": pid, "gender": "female" if rng.random() < 0.5 else "male",
                         "birthDate": f"{int(rng.integers(1935, 2005))}-0{int(rng.integers(1, 9))}-1{int(rng.integers(0, 9))}"})
        mean = rng.normal(4.2, 0.35)
        level = mean + rng.normal(0, 0.3)
        t = START + dt.timedelta(days=int(rng.integers(0, 300)), hours=int(rng.integers(0, 24)))
        for _ in range(int(rng.integers(5, 13))):
            level = mean + 0.7 * (level - mean) + rng.normal(0, 0.25)
            value = round(float(level + rng.normal(0, 0.12)), 1)
            obs_id += 1
            observations.append({
                "resourceType": "Observation", "id": f"k{obs_id:06d}", "status": "final",
                "code": {"coding": [{"system": "http://loinc.org", "code": LOINC_POTASSIUM,
                                     "display": "Potassium [Moles/volume] in Serum or Plasma"}]},
                "subject": {"reference": f"Patient/{pid}"},
                "effectiveDateTime": t.isoformat().replace("+00:00", "Z"),
                "valueQuantity": {"value": value, "unit": "mmol/L", "system": "http://unitsofmeasure.org",
                                  "code": "mmol/L"}})
            t += dt.timedelta(hours=float(rng.uniform(6, 30)))
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("Patient.ndjson", patients), ("Observation.ndjson", observations)):
        (folder / name).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")


def _lines(folder: Path, name: str) -> list[dict]:
    path = folder / name
    if not path.is_file():
        raise FhirError(f"{path}: no such file; a FHIR bulk export folder must hold {', '.join(FILES)}")
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            resource = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FhirError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if resource.get("resourceType") != name.removesuffix(".ndjson"):
            raise FhirError(f"{path}:{number}: resourceType {resource.get('resourceType')!r}, expected "
                            f"{name.removesuffix('.ndjson')!r}")
        out.append(resource)
    return out


def _is_potassium(obs: dict) -> bool:
    return obs.get("status") == "final" and any(
        c.get("system") == "http://loinc.org" and c.get("code") == LOINC_POTASSIUM
        for c in obs.get("code", {}).get("coding", []))


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: str
    folder: Path
    n_patients: int
    n_observations: int


def load_snapshot(location: Path, out_dir: Path) -> Snapshot:
    """Read the export in ``location`` and write (or find) its snapshot under ``out_dir``."""
    digest = hashlib.sha256()
    for name in FILES:
        path = location / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b""))
    patients = {p["id"]: p for p in _lines(location, "Patient.ndjson")}
    rows = []
    for obs in _lines(location, "Observation.ndjson"):
        if not _is_potassium(obs):
            continue
        ref = obs.get("subject", {}).get("reference", "")
        pid = ref.removeprefix("Patient/")
        quantity = obs.get("valueQuantity") or {}
        if pid not in patients or quantity.get("unit") != "mmol/L" or "value" not in quantity:
            continue
        when = dt.datetime.fromisoformat(obs["effectiveDateTime"].replace("Z", "+00:00"))
        rows.append((pid, when, float(quantity["value"])))
    rows.sort()
    snapshot_id = digest.hexdigest()[:16]
    folder = out_dir / snapshot_id
    if not (folder / "observations.parquet").exists():
        with atomic_directory(folder, marker="observations.parquet") as tmp:
            pq.write_table(pa.table({"patient_id": [r[0] for r in rows],
                                     "time": pa.array([r[1] for r in rows], pa.timestamp("s", tz="UTC")),
                                     "value": pa.array([r[2] for r in rows], pa.float64())}),
                           tmp / "observations.parquet")
            pq.write_table(pa.table({"patient_id": list(patients),
                                     "gender": [p.get("gender") for p in patients.values()]}),
                           tmp / "patients.parquet")
    return Snapshot(snapshot_id, folder, len(patients), len(rows))
