"""The ``toyhospital-transfusion`` family (kind ``score``): from the haemoglobin results of an
admission's first 48 hours, score the risk of a red-cell transfusion after hour 48.

Instances ``admissions.parquet``: one row per admission with at least ``min_valid_bins`` results
(its 6-hour haemoglobin grid, ``cohort.py``), the label, and its patient's split. The family asks a
``FitAndScore`` of those grids, so any backend that scores evenly spaced readings serves it (the
built-in rule and sklearn backends: their window features read any such series). Admissions of one
patient are not independent, so the family declares ``cluster_column = "subject_id"``: every
interval (the AUROC's, rank intervals, ``/v1/compare``, the baseline difference) resamples patients.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from medbench_toyhospital.cohort import lab_grid, split_of
from pipelines.core.canonical import SpecStruct
from pipelines.core.evaluation import Evaluation
from pipelines.core.specs import TaskSpec
from pipelines.kinds.score import Score
from pipelines.stats.auroc import cluster_bootstrap, roc_points
from pipelines.tasks.base import (
    CheckOutcome, FitAndScore, Instances, Log, ScoreSummary, TaskFamily, predicted_once, scores_finite,
)

# the score kind's columns (instance_id, score, label), then the cluster column
PREDICTIONS_SCHEMA = pa.schema([*Score.schema, ("subject_id", pa.int64())])
METHOD = "cluster-bootstrap-percentile"


class TransfusionSettings(SpecStruct):
    """The ``[transfusion]`` table."""

    itemid: int              # the lab (51222: haemoglobin)
    input_hours: int
    step_hours: int
    min_valid_bins: int      # an admission with fewer results is left out
    split_salt: str
    test_below: int          # buckets 0..test_below-1 are test
    validation_below: int    # then validation up to here; the rest train
    baseline_model: str = ""


class RocPoints(msgspec.Struct, frozen=True):
    fpr: list[float]
    tpr: list[float]


class TransfusionExtras(msgspec.Struct, frozen=True):
    roc: RocPoints           # the site draws it (the score kind's picture)
    admissions: int
    patients: int
    positives: int
    bootstrap_dropped_replicates: int


class Transfusion(TaskFamily):
    name = "toyhospital-transfusion"
    kind = "score"
    cluster_column = "subject_id"
    dataset = "toyhospital"
    settings_key = "transfusion"
    settings_type = TransfusionSettings
    instances_file = "admissions.parquet"
    predictions_schema = PREDICTIONS_SCHEMA
    instance_check_names = ("patients_in_one_split", "both_classes_in_test")
    prediction_check_names = ("every_instance_predicted_once", "scores_finite")
    check_descriptions = {
        "patients_in_one_split": "No patient has admissions in two splits.",
        "both_classes_in_test": "The test split holds transfused and not transfused admissions (AUROC is defined).",
    }

    def check_settings(self, task: TaskSpec) -> None:
        s: TransfusionSettings = task.settings
        if s.step_hours <= 0 or s.input_hours % s.step_hours:
            raise ValueError("input_hours must be a positive multiple of step_hours")
        if not 0 < s.test_below < s.validation_below < 100:
            raise ValueError("need 0 < test_below < validation_below < 100")

    def snapshot_options(self, task: TaskSpec) -> dict[str, Any]:
        return {}

    def parser_version(self, task: TaskSpec) -> str | None:
        return None

    def baseline_model(self, task: TaskSpec) -> str | None:
        return task.settings.baseline_model or None

    def build_instances(self, task: TaskSpec, snapshot: Path, out: Path, log: Log) -> Instances:
        s: TransfusionSettings = task.settings
        grid = lab_grid(snapshot, s.itemid, s.input_hours, s.step_hours)
        keep = (~np.isnan(grid.values)).sum(axis=1) >= s.min_valid_bins
        adm = grid.admissions.filter(pa.array(keep))
        subjects = adm.column("subject_id").to_pylist()
        table = pa.table({
            "instance_id": pa.array([str(h) for h in adm.column("hadm_id").to_pylist()], pa.string()),
            "subject_id": pa.array(subjects, pa.int64()),
            "label": pa.array(adm.column("transfusion_time").is_valid().to_numpy(zero_copy_only=False), pa.int8()),
            "split": [split_of(p, s.split_salt, s.test_below, s.validation_below) for p in subjects],
            "values": pa.array(list(grid.values[keep]), pa.list_(pa.float32(), grid.values.shape[1])),
        })
        pq.write_table(table, out)
        log(f"{task.ref}: {table.num_rows} admissions of {len(set(subjects))} patients")
        return Instances(out, table.num_rows, {"patients": len(set(subjects))})

    def instance_checks(self, task: TaskSpec, instances: Path) -> list[CheckOutcome]:
        table = pq.read_table(instances, columns=["subject_id", "split", "label"])
        per_patient = table.group_by(["subject_id"]).aggregate([("split", "count_distinct")])
        test = table.filter(pc.equal(table.column("split"), "test")).column("label").to_numpy()
        return [CheckOutcome("patients_in_one_split", max(per_patient.column(1).to_pylist(), default=1) == 1),
                CheckOutcome("both_classes_in_test", bool(len(test)) and 0 < int(test.sum()) < len(test),
                             metadata={"test admissions": len(test), "test positives": int(test.sum())})]

    def expected_ids(self, task: TaskSpec, instances: Path) -> set[str]:
        table = pq.read_table(instances, columns=["instance_id", "split"])
        return set(table.filter(pc.equal(table.column("split"), "test")).column("instance_id").to_pylist())

    def problem(self, ev: Evaluation, instances: Path) -> FitAndScore:
        table = pq.read_table(instances)

        def part(split: str) -> tuple[pa.Table, np.ndarray]:
            rows = table.filter(pc.equal(table.column("split"), split))
            values = np.asarray(rows.column("values").to_pylist(), dtype=np.float32).reshape(rows.num_rows, -1)
            return rows, values

        (train, train_x), (val, val_x), (test, test_x) = part("train"), part("validation"), part("test")
        own = ev.backend.fit_seed(ev.model)
        seed = int(own) if own is not None else int(ev.task.bootstrap.seed)

        def predictions(scores: np.ndarray) -> pa.Table:
            return pa.table({"instance_id": test.column("instance_id"), "score": pa.array(scores, pa.float64()),
                             "label": test.column("label"), "subject_id": test.column("subject_id")},
                            schema=PREDICTIONS_SCHEMA)

        return FitAndScore(train=(train_x, train.column("label").to_numpy()),
                           validation=(val_x, val.column("label").to_numpy()), test=test_x,
                           step_seconds=ev.task.settings.step_hours * 3600, table=predictions, seed=seed,
                           config={"fit_seed": seed})

    def score(self, task: TaskSpec, predictions: pa.Table, instances: Path) -> ScoreSummary:
        scores = predictions.column("score").to_numpy().astype(np.float64)
        labels = predictions.column("label").to_numpy().astype(np.int8)
        patients = predictions.column("subject_id").to_numpy()
        boot = cluster_bootstrap(scores, labels, patients, task.bootstrap.replicates, task.bootstrap.seed,
                                 prevalence_all_replicates=task.intervals.prevalence == "all-replicates")
        extras = TransfusionExtras(roc=RocPoints(**roc_points(scores, labels)), admissions=len(scores),
                                   patients=len(np.unique(patients)), positives=int(labels.sum()),
                                   bootstrap_dropped_replicates=int(boot.n_dropped))
        metrics = [(m["name"], float(m["value"]), float(m["ci_low"]), float(m["ci_high"]), METHOD)
                   for m in boot.metrics()]
        return ScoreSummary(metrics=metrics, n=len(scores), parse_rate=None, extras=extras)

    def prediction_checks(self, task: TaskSpec, predictions: pa.Table, expected: set[str]) -> list[CheckOutcome]:
        return [predicted_once(predictions, expected), scores_finite(predictions)]
