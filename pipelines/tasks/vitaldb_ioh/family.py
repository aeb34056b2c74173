"""The vitaldb-ioh task family: 5-minute-ahead intraoperative hypotension from 5 minutes of MAP.

Dataset ``vitaldb`` (cases, track list, Solar8000/ART_MBP readings); instances ``windows.parquet``
(cohort, 2-second grid, windows, labels and the subject split: ``cohort.py``, ``grid.py``,
``windows.py``, ``split.py``, ``instances.py``); the family declares a ``FitAndScore`` of MAP windows,
which any window-scoring backend answers (``pipelines.backends.window_scorers``: rules and
scikit-learn models fitted on the train split; a rule's score is recalibrated to a probability on
the validation split, ``probabilities``); the score is AUROC over the test windows with a
cluster-bootstrap interval over test subjects, plus AUPRC, prevalence and the ROC points the site
draws (``score.py``). Warehouse kind ``score``.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from medbench.evaluation import Evaluation
from medbench.specs import TaskSpec
from medbench.kinds.score import Score
from medbench.stats.calibration import Recalibration
from medbench.stats.decision import alarm_threshold
from pipelines.tasks.base import (
    CheckOutcome, FitAndScore, Instances, Log, ScoreSummary, TaskFamily, predicted_once, scores_finite,
)
from pipelines.tasks.vitaldb_ioh.grid import check_settings
from pipelines.tasks.vitaldb_ioh.instances import build_windows, flow_path, flow_steps, read_windows
from pipelines.tasks.vitaldb_ioh.reporting import probability_metadata, validation_metadata
from pipelines.tasks.vitaldb_ioh.score import score_metrics
from pipelines.tasks.vitaldb_ioh.settings import IohSettings

PREVALENCE_RANGE = (0.005, 0.6)
# the score kind's columns (instance_id, score, label), then the family's own
PREDICTIONS_SCHEMA = pa.schema([*Score.schema, ("caseid", pa.int32()), ("subjectid", pa.int32()), ("t", pa.int32())])


def fit_seed(ev: Evaluation) -> tuple[int, str]:
    """The seed a scorer is fitted with, and where it came from (``task`` or ``model``).

    The spec's ``fit_seed = "model"`` uses the model spec's own ``seed`` (the scikit-learn specs
    set one) when it is given; otherwise, and under the default ``"task"`` that earlier results
    were fitted with, the task's bootstrap seed.
    """
    own = ev.backend.fit_seed(ev.model)
    if ev.task.settings.fit_seed == "model" and own is not None:
        return int(own), "model"
    return int(ev.task.bootstrap.seed), "task"


def test_attributes(instances: Path, predictions: pa.Table) -> dict[str, list]:
    """Sex and age of each predicted window, from the instances (aligned with the predictions)."""
    names = pq.read_schema(instances).names
    if "sex" not in names or "age" not in names:
        raise ValueError(f"{instances} has no sex/age columns (built by an older version): "
                         "rebuild the task's instances (medbench materialize) and score again")
    table = pq.read_table(instances, columns=["instance_id", "sex", "age"], filters=[("split", "=", "test")])
    at = {i: k for k, i in enumerate(table.column("instance_id").to_pylist())}
    rows = [at[i] for i in predictions.column("instance_id").to_pylist()]
    sex, age = table.column("sex").to_pylist(), table.column("age").to_pylist()
    return {"sex": [sex[k] for k in rows], "age": [age[k] for k in rows]}


def _public_windows(task: TaskSpec, instances: Path, split: str) -> list[dict[str, Any]]:
    """One split's windows as an official package sees them: id, step and MAP only."""
    meta, inputs = read_windows(instances, split=split)
    step = task.settings.bin_seconds
    return [{"instance_id": iid, "step_seconds": step,
             "map": [None if np.isnan(v) else round(float(v), 4) for v in row]}
            for iid, row in zip(meta["instance_id"].to_list(), inputs)]


def probabilities(partition_key: str, val_labels: np.ndarray, alarm_rates=(), val_subjects: np.ndarray | None = None):
    """The ``FitAndScore.finish`` of this family: a scorer whose score is no probability (a rule) is
    mapped to one by a logistic recalibration fitted on the validation split only; a probabilistic
    scorer gets the same recalibration of logit p, for the recalibrated twins of its calibration
    metrics; and each alarm rate's score threshold is chosen on the validation windows. All of it is
    stored in the predictions' metadata (``reporting.probability_metadata``) and the result's config,
    and, given ``val_subjects``, the validation windows themselves (score, label, subject:
    ``reporting.validation_metadata``), for scoring to refit the map and thresholds in every
    bootstrap replicate on resampled validation subjects."""

    def finish(val_scores: np.ndarray, probabilistic: bool, log: Log) -> tuple[dict[bytes, bytes], dict[str, Any]]:
        recalibration = validation = None
        if not len(val_scores):  # no validation scores (a package run before its validation windows were given)
            if not probabilistic:
                raise ValueError(f"{partition_key}: scores that are not probabilities need validation scores "
                                 "to be recalibrated")
            config = {"probabilities": {"probabilistic": True, "recalibration": None}}
            return probability_metadata(True, None), config
        if not probabilistic:
            recalibration = Recalibration.fit(val_scores, val_labels)
            log(f"{partition_key}: logistic recalibration on {recalibration.n} validation windows: "
                f"a = {recalibration.a:.4g}, b = {recalibration.b:.4g}")
        else:
            p = np.clip(np.asarray(val_scores, dtype=np.float64), 1e-12, 1 - 1e-12)
            validation = Recalibration.fit(np.log(p / (1 - p)), val_labels)
            log(f"{partition_key}: recalibration of logit p on {validation.n} validation windows: "
                f"intercept {validation.a:.4g}, slope {validation.b:.4g}")
        thresholds = {float(r): alarm_threshold(val_scores, float(r)) for r in alarm_rates}
        config = {"probabilities": {"probabilistic": probabilistic,
                                    "recalibration": recalibration.as_dict() if recalibration else None,
                                    "validation_recalibration": validation.as_dict() if validation else None,
                                    "alarm_thresholds": {f"{r:g}": t for r, t in thresholds.items()}}}
        metadata = probability_metadata(probabilistic, recalibration, validation, thresholds)
        if val_subjects is not None:
            metadata.update(validation_metadata(val_scores, val_labels, val_subjects))
        return metadata, config

    return finish


class VitalDbIoh(TaskFamily):
    name = "vitaldb-ioh"
    kind = "score"
    cluster_column = "subjectid"  # windows of one patient are not independent: intervals resample subjects
    dataset = "vitaldb"
    settings_key = "ioh"
    settings_type = IohSettings
    instances_file = "windows.parquet"
    official_splits = ("test", "validation")  # a package's validation scores fit its recalibration (issue 41)
    predictions_schema = PREDICTIONS_SCHEMA
    instance_check_names = ("subjects_in_one_split", "label_prevalence_in_range", "both_classes_in_test")
    prediction_check_names = ("every_instance_predicted_once", "scores_finite")
    check_descriptions = {
        "subjects_in_one_split": "No subject has windows in two splits (train/validation/test are disjoint by subject).",
        "label_prevalence_in_range": "The positive-label prevalence over all windows is in a sane range.",
        "both_classes_in_test": "The test split holds both positive and negative windows (AUROC is defined).",
        "every_instance_predicted_once": ("Every test-split instance id appears in the predictions exactly once, "
                                          "and no other id does."),
        "scores_finite": "Every predicted score is a finite number (no NaN or infinity).",
    }

    # -- spec --------------------------------------------------------------------------

    def check_settings(self, task: TaskSpec) -> None:
        check_settings(task.settings)

    def snapshot_options(self, task: TaskSpec) -> dict[str, Any]:
        return {"track": task.settings.track}

    def parser_version(self, task: TaskSpec) -> str | None:
        return None

    # -- instances ---------------------------------------------------------------------

    def build_instances(self, task: TaskSpec, snapshot: Path, out: Path, log: Log) -> Instances:
        summary = build_windows(snapshot, task.settings, out, log=log)
        return Instances(out, summary.n_windows, summary.as_dict())

    def instance_checks(self, task: TaskSpec, instances: Path) -> list[CheckOutcome]:
        table = pq.read_table(instances, columns=["subjectid", "split", "label"])
        pairs = table.group_by(["subjectid"]).aggregate([("split", "count_distinct")])
        disjoint = max(pairs.column("split_count_distinct").to_pylist(), default=1) == 1
        labels = table.column("label").to_numpy()
        prevalence = float(labels.mean()) if len(labels) else 0.0
        test = table.filter(pc.equal(table.column("split"), "test")).column("label").to_numpy()
        both = bool(len(test)) and 0 < test.sum() < len(test)
        return [
            CheckOutcome("subjects_in_one_split", disjoint),
            CheckOutcome("label_prevalence_in_range", PREVALENCE_RANGE[0] <= prevalence <= PREVALENCE_RANGE[1],
                         metadata={"range": str(PREVALENCE_RANGE), f"{task.ref} prevalence": round(prevalence, 4)}),
            CheckOutcome("both_classes_in_test", bool(both)),
        ]

    def expected_ids(self, task: TaskSpec, instances: Path) -> set[str]:
        table = pq.read_table(instances, columns=["instance_id", "split"])
        return {i for i, s in zip(table.column("instance_id").to_pylist(), table.column("split").to_pylist())
                if s == "test"}

    # -- predict and score -------------------------------------------------------------

    def problem(self, ev: Evaluation, instances: Path) -> FitAndScore:
        """MAP windows of the train and validation splits to fit on, the test split's to score."""
        train_meta, train_x = read_windows(instances, split="train")
        val_meta, val_x = read_windows(instances, split="validation")
        test_meta, test_x = read_windows(instances, split="test")
        seed, seed_from = fit_seed(ev)

        def table(scores: np.ndarray) -> pa.Table:
            return pa.table({
                "instance_id": pa.array(test_meta["instance_id"].to_list(), pa.string()),
                "score": pa.array(scores, pa.float64()),
                "label": pa.array(test_meta["label"].to_numpy().astype(np.int8), pa.int8()),
                "caseid": pa.array(test_meta["caseid"].to_numpy(), pa.int32()),
                "subjectid": pa.array(test_meta["subjectid"].to_numpy(), pa.int32()),
                "t": pa.array(test_meta["t"].to_numpy(), pa.int32()),
            })

        return FitAndScore(
            train=(train_x, train_meta["label"].to_numpy()), validation=(val_x, val_meta["label"].to_numpy()),
            test=test_x, step_seconds=ev.task.settings.bin_seconds, table=table, seed=seed,
            config={"fit_seed": seed, "fit_seed_from": seed_from},
            finish=probabilities(ev.partition_key, val_meta["label"].to_numpy(),
                                 ev.task.settings.reporting.alarm_rates, val_meta["subjectid"].to_numpy()),
        )

    def score(self, task: TaskSpec, predictions: pa.Table, instances: Path) -> ScoreSummary:
        return score_metrics(predictions, task.bootstrap, task.intervals, task.settings.reporting,
                             test_attributes(instances, predictions))

    def public_instances(self, task: TaskSpec, snapshot: Path, instances: Path) -> list[dict[str, Any]]:
        """Each test window's input: mean arterial pressure (mmHg) every ``step_seconds``, null where
        missing; no label, no subject or case id."""
        return _public_windows(task, instances, "test")

    def public_validation_instances(self, task: TaskSpec, snapshot: Path, instances: Path) -> list[dict[str, Any]]:
        """The validation windows' inputs, shaped as the test windows' (never a label), in the order
        ``problem``'s validation labels take them: the package's scores for them fit the same
        recalibration and alarm thresholds as a backend's (``probabilities``)."""
        return _public_windows(task, instances, "validation")

    def participant_flow(self, task: TaskSpec, instances: Path) -> list[dict[str, Any]] | None:
        """Cases in the snapshot -> exclusions -> cohort -> windows -> splits, as built (None: not
        built), as labelled counts (``instances.flow_steps``)."""
        path = flow_path(instances)
        return flow_steps(msgspec.json.decode(path.read_bytes())) if path.exists() else None

    def baseline_model(self, task: TaskSpec) -> str | None:
        """The model whose result every result of ``task`` is compared with at publish time."""
        return task.settings.baseline_model or None

    def prediction_checks(self, task: TaskSpec, predictions: pa.Table, expected: set[str]) -> list[CheckOutcome]:
        return [predicted_once(predictions, expected), scores_finite(predictions)]
