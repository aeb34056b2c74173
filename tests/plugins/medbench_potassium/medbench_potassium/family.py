"""The ``potassium-next`` family (kind ``regression``): from a ward patient's previous serum potassium
results (up to ``history`` of them), predict the next one (mmol/L).

Instances ``measurements.parquet``: one row per potassium result that has at least ``min_history``
results before it, with those results (left-padded with NaN to ``history``), the observed value
and the patient's split (a fixed hash of the patient id). Results of one patient are not
independent, so the family declares ``cluster_column = "patient_id"``: every interval (the
metrics', rank intervals, ``/v1/compare``, the baseline difference) resamples patients.

What it asks a model is a ``Forecast``, a problem shape of its own that solves itself
(``pipelines.core.protocols.Problem``): it asks the evaluation's backend for a forecaster
(``forecast`` backend), fits it on train and predicts test.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from medbench_potassium.kind import Regression, regression_metrics
from pipelines.core.canonical import SpecStruct
from pipelines.core.evaluation import Evaluation
from pipelines.core.outcomes import Predicted, Usage
from pipelines.core.protocols import NotRunnable
from pipelines.core.specs import TaskSpec
from pipelines.tasks.base import CheckOutcome, Instances, Log, ScoreSummary, TaskFamily, predicted_once

PREDICTIONS_SCHEMA = pa.schema([*Regression.schema, ("patient_id", pa.string())])


class PotassiumSettings(SpecStruct):
    """The ``[potassium]`` table."""

    history: int            # previous results handed to a model (NaN-padded)
    min_history: int        # a result with fewer before it is not an instance
    split_salt: str
    test_below: int         # hash buckets 0..test_below-1 are test
    baseline_model: str = ""


class ByDecile(msgspec.Struct, frozen=True):
    predicted: list[float]
    observed: list[float]


class PotassiumExtras(msgspec.Struct, frozen=True):
    by_decile: ByDecile     # the regression kind's figure
    measurements: int
    patients: int


def split_of(patient: str, salt: str, test_below: int) -> str:
    bucket = int(hashlib.sha256((salt + patient).encode()).hexdigest()[:8], 16) % 100
    return "test" if bucket < test_below else "train"


def by_decile(predicted: np.ndarray, observed: np.ndarray) -> ByDecile:
    order = np.argsort(predicted, kind="stable")
    parts = [p for p in np.array_split(order, 10) if len(p)]
    return ByDecile([round(float(predicted[p].mean()), 6) for p in parts],
                    [round(float(observed[p].mean()), 6) for p in parts])


@dataclass(frozen=True)
class Forecast:
    """Train (history, next value) and test histories; ``table`` makes the predictions table."""

    train: tuple[np.ndarray, np.ndarray]
    test: np.ndarray
    table: Any
    config: dict[str, Any] = field(default_factory=dict)

    def solve(self, ev: Evaluation, data: Any, log: Log) -> Predicted:
        started = time.monotonic()
        make = getattr(ev.backend, "forecaster", None)
        if make is None:
            raise NotRunnable(f"{ev.model.slug}: backend {ev.model.backend!r} does not forecast a next value")
        forecaster = make(ev.model)
        forecaster.fit(*self.train)
        predicted = np.asarray(forecaster.predict(self.test), dtype=np.float64)
        log(f"{ev.partition_key}: predicted {len(predicted)} test measurements")
        wall = time.monotonic() - started
        config = {"backend": ev.model.backend, "backend_settings": ev.backend.published(ev.model.settings),
                  "bootstrap": msgspec.to_builtins(ev.task.bootstrap), "fitted": forecaster.describe(), **self.config}
        return Predicted(table=self.table(predicted), usage=asdict(Usage(wall_seconds=wall, device_seconds=wall)),
                         config=config, generation_key=None)


class NextPotassium(TaskFamily):
    name = "potassium-next"
    kind = "regression"
    cluster_column = "patient_id"
    dataset = "fhirward"
    settings_key = "potassium"
    settings_type = PotassiumSettings
    instances_file = "measurements.parquet"
    predictions_schema = PREDICTIONS_SCHEMA
    instance_check_names = ("patients_in_one_split", "test_split_not_empty")
    prediction_check_names = ("every_instance_predicted_once", "predictions_finite")
    check_descriptions = {
        "patients_in_one_split": "No patient has measurements in two splits.",
        "test_split_not_empty": "The test split holds measurements of at least 10 patients.",
        "predictions_finite": "Every prediction is a finite number.",
    }

    def check_settings(self, task: TaskSpec) -> None:
        s: PotassiumSettings = task.settings
        if not 1 <= s.min_history <= s.history:
            raise ValueError("need 1 <= min_history <= history")
        if not 0 < s.test_below < 100:
            raise ValueError("need 0 < test_below < 100")

    def snapshot_options(self, task: TaskSpec) -> dict[str, Any]:
        return {}

    def parser_version(self, task: TaskSpec) -> str | None:
        return None

    def baseline_model(self, task: TaskSpec) -> str | None:
        return task.settings.baseline_model or None

    def build_instances(self, task: TaskSpec, snapshot: Path, out: Path, log: Log) -> Instances:
        s: PotassiumSettings = task.settings
        obs = pq.read_table(snapshot / "observations.parquet").sort_by([("patient_id", "ascending"),
                                                                         ("time", "ascending")])
        patients, values = obs.column("patient_id").to_pylist(), obs.column("value").to_numpy()
        rows: dict[str, list] = {"instance_id": [], "patient_id": [], "observed": [], "history": [], "split": []}
        start = 0
        while start < len(patients):
            end = start
            while end < len(patients) and patients[end] == patients[start]:
                end += 1
            series = values[start:end]
            for k in range(s.min_history, len(series)):
                past = series[max(0, k - s.history):k]
                padded = np.concatenate([np.full(s.history - len(past), np.nan), past]).astype(np.float64)
                rows["instance_id"].append(f"{patients[start]}-{k}")
                rows["patient_id"].append(patients[start])
                rows["observed"].append(float(series[k]))
                rows["history"].append(padded.tolist())
                rows["split"].append(split_of(patients[start], s.split_salt, s.test_below))
            start = end
        table = pa.table({**{k: rows[k] for k in ("instance_id", "patient_id", "split")},
                          "observed": pa.array(rows["observed"], pa.float64()),
                          "history": pa.array(rows["history"], pa.list_(pa.float64(), s.history))})
        pq.write_table(table, out)
        log(f"{task.ref}: {table.num_rows} measurements of {len(set(rows['patient_id']))} patients")
        return Instances(out, table.num_rows, {"patients": len(set(rows["patient_id"]))})

    def instance_checks(self, task: TaskSpec, instances: Path) -> list[CheckOutcome]:
        table = pq.read_table(instances, columns=["patient_id", "split"])
        per_patient = table.group_by(["patient_id"]).aggregate([("split", "count_distinct")])
        test = table.filter(pc.equal(table.column("split"), "test"))
        n_test_patients = len(set(test.column("patient_id").to_pylist()))
        return [CheckOutcome("patients_in_one_split", max(per_patient.column(1).to_pylist(), default=1) == 1),
                CheckOutcome("test_split_not_empty", n_test_patients >= 10,
                             metadata={"test measurements": test.num_rows, "test patients": n_test_patients})]

    def expected_ids(self, task: TaskSpec, instances: Path) -> set[str]:
        table = pq.read_table(instances, columns=["instance_id", "split"])
        return set(table.filter(pc.equal(table.column("split"), "test")).column("instance_id").to_pylist())

    def participant_flow(self, task: TaskSpec, instances: Path) -> list[dict[str, Any]] | None:
        if not Path(instances).exists():
            return None
        table = pq.read_table(instances, columns=["patient_id", "split"])
        steps = [{"label": "measurements with enough history", "count": table.num_rows, "unit": "measurements",
                  "level": 0, "note": f"{len(set(table.column('patient_id').to_pylist()))} patients"}]
        for split in ("train", "test"):
            part = table.filter(pc.equal(table.column("split"), split))
            steps.append({"label": split, "count": part.num_rows, "unit": "measurements", "level": 1,
                          "note": f"{len(set(part.column('patient_id').to_pylist()))} patients"})
        return steps

    def problem(self, ev: Evaluation, instances: Path) -> Forecast:
        table = pq.read_table(instances)

        def part(split: str) -> tuple[pa.Table, np.ndarray]:
            rows = table.filter(pc.equal(table.column("split"), split))
            return rows, np.asarray(rows.column("history").to_pylist(), dtype=np.float64).reshape(rows.num_rows, -1)

        (train, train_x), (test, test_x) = part("train"), part("test")

        def predictions(predicted: np.ndarray) -> pa.Table:
            return pa.table({"instance_id": test.column("instance_id"), "predicted": pa.array(predicted, pa.float64()),
                             "observed": test.column("observed"), "patient_id": test.column("patient_id")},
                            schema=PREDICTIONS_SCHEMA)

        return Forecast(train=(train_x, train.column("observed").to_numpy()), test=test_x, table=predictions)

    def score(self, task: TaskSpec, predictions: pa.Table, instances: Path) -> ScoreSummary:
        predicted = predictions.column("predicted").to_numpy().astype(np.float64)
        observed = predictions.column("observed").to_numpy().astype(np.float64)
        patients = np.asarray(predictions.column("patient_id").to_pylist())
        metrics = regression_metrics(predicted, observed, patients, task.bootstrap.replicates, task.bootstrap.seed)
        extras = PotassiumExtras(by_decile=by_decile(predicted, observed), measurements=len(predicted),
                                 patients=len(np.unique(patients)))
        return ScoreSummary(metrics=metrics, n=len(predicted), parse_rate=None, extras=extras)

    def prediction_checks(self, task: TaskSpec, predictions: pa.Table, expected: set[str]) -> list[CheckOutcome]:
        finite = bool(np.isfinite(predictions.column("predicted").to_numpy()).all())
        return [predicted_once(predictions, expected), CheckOutcome("predictions_finite", finite)]
