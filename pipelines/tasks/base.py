"""The ``TaskFamily`` protocol: everything the engine, the Dagster assets and the CLI need to know
about a kind of task, so that none of them names a task.

A family is a declaration plus a few small callables (Inspect's Task, HELM's scenario -> adapter ->
metric): which dataset it reads, how its instances are built from that dataset's snapshot, which
backend interface predicts it, how predictions become a typed score summary, what its checks are.
Each family maps onto one of the warehouse's two kinds (``choice``: a letter per item, accuracy;
``score``: a number per item, AUROC), which is all the API knows about tasks. Adding a task family is
one folder under ``pipelines/tasks/`` with one ``register(...)`` call in ``pipelines/tasks/registry.py``
(or, for a test or a plug-in, one ``register(...)`` call from its own module) plus its spec files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Literal, Protocol

import msgspec
import pyarrow as pa

if TYPE_CHECKING:
    from pipelines.engine.evaluate import Evaluation
    from pipelines.engine.specs import TaskSpec
    from pipelines.engine.summary import ScoreSummary
    from warehouse.layout import DataDir

Kind = Literal["choice", "score"]
Log = Callable[[str], None]


@dataclass(frozen=True)
class CheckOutcome:
    """One asset check's verdict, as plain data (the Dagster layer turns it into an AssetCheckResult)."""

    name: str
    passed: bool
    description: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    severity: Literal["error", "warn"] = "error"


@dataclass(frozen=True)
class Instances:
    """What building a task version's instances produced (for asset metadata and logs)."""

    path: Path            # the instances file (Parquet) of this task version and snapshot
    rows: int
    details: dict[str, Any] = field(default_factory=dict)
    snapshot_id: str = ""  # filled in by the engine (pipelines.engine.inputs.materialise_instances)


@dataclass(frozen=True)
class Predicted:
    """What a family's ``predict`` hands back to the engine, which writes and hashes the table."""

    table: pa.Table                      # in the family's ``predictions_schema``
    usage: dict[str, Any]                # pipelines.backends.base.Usage as a dict
    config: dict[str, Any]               # what the run was given (published as the result's config)
    generation_key: str | None = None    # raw outputs' key (text generation), else None


@dataclass(frozen=True)
class ReplayScore:
    """``medbench score``'s view of a file of raw outputs scored locally (families that read text)."""

    parser_version: str | None
    n: int
    status_counts: dict[str, int]
    metrics: list[Any]                   # items with .name .value .ci_low .ci_high, primary first
    rows: list[dict[str, Any]]           # per item: instance_id, prediction, parse_status, correct


class TaskFamily(Protocol):
    """One family of tasks (e.g. five-option clinical questions; windowed hypotension prediction)."""

    name: ClassVar[str]                          # the task spec's `family`
    kind: ClassVar[Kind]                         # the warehouse kind (``pipelines.kinds.kind(name)``)
    # the predictions column whose values are the resampling clusters of every interval (rank
    # intervals, /v1/compare, the baseline difference; recorded in the warehouse's ``tasks`` table);
    # None: items are independent, each its own cluster
    cluster_column: ClassVar[str | None]
    dataset: ClassVar[str]                       # slug of the dataset whose snapshot it reads
    settings_key: ClassVar[str]                  # the spec table that holds its settings
    settings_type: ClassVar[type[msgspec.Struct]]  # that table, typed (strict: unknown keys are errors)
    instances_file: ClassVar[str]                # e.g. "items.parquet", "windows.parquet"
    predictions_schema: ClassVar[pa.Schema]      # its kind's ``schema`` first, then its own columns
    instances_asset: ClassVar[str]               # the Dagster asset holding its instances, e.g. "clinicalqa_items"
    instance_check_names: ClassVar[tuple[str, ...]]    # names of the CheckOutcomes instance_checks returns
    prediction_check_names: ClassVar[tuple[str, ...]]  # names of the CheckOutcomes prediction_checks returns

    def snapshot_options(self, task: TaskSpec) -> dict[str, Any]:
        """What the dataset's snapshot must honour for this task (e.g. a row count, a track name)."""

    def parser_version(self, task: TaskSpec) -> str | None:
        """The parser a result records in ``versions.parser`` (None where nothing is parsed)."""

    def check_settings(self, task: TaskSpec) -> None:
        """Cross-field validation of a decoded spec; raises SpecError naming the key."""

    def build_instances(self, task: TaskSpec, snapshot: Path, out: Path, log: Log) -> Instances:
        """Build the task version's instances from the dataset snapshot at ``snapshot`` into ``out``."""

    def instance_checks(self, task: TaskSpec, instances: Path) -> list[CheckOutcome]:
        """Checks on the built instances (row counts, split disjointness, prevalence, ...)."""

    def expected_ids(self, task: TaskSpec, instances: Path) -> set[str]:
        """The instance ids an evaluation must predict exactly once."""

    def predict(self, ev: Evaluation, instances: Path, data: DataDir, log: Log) -> Predicted:
        """Run (or resume, or replay) the evaluation's model on the instances."""

    def score(self, task: TaskSpec, predictions: pa.Table, instances: Path) -> ScoreSummary:
        """Metrics with CIs and the typed extras, from the predictions (never calls a model)."""

    def prediction_checks(self, task: TaskSpec, predictions: pa.Table, expected: set[str]) -> list[CheckOutcome]:
        """Checks on one evaluation's predictions (every instance once, finite scores, ...)."""

    # Optional: ``score_replay(task, snapshot: Path, outputs: Path) -> ReplayScore`` for families whose
    # models answer in text, used by ``medbench score`` (raises pipelines.backends.replay.ReplayError).


# --------------------------------------------------------------------------- shared checks


def predicted_once(predictions: pa.Table, expected: set[str]) -> CheckOutcome:
    """Every expected instance predicted exactly once, and nothing else."""
    ids = predictions.column("instance_id").to_pylist()
    once = len(ids) == len(set(ids)) and set(ids) == expected
    return CheckOutcome("every_instance_predicted_once", once,
                        metadata={"predicted": len(ids), "distinct": len(set(ids)), "expected": len(expected)})


def scores_finite(predictions: pa.Table) -> CheckOutcome:
    """Every score is a finite number (score kinds)."""
    import numpy as np

    return CheckOutcome("scores_finite", bool(np.isfinite(predictions.column("score").to_numpy()).all()))

