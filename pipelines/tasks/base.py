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


@dataclass(frozen=True)
class Predicted:
    """What a family's ``predict`` hands back to the engine, which writes and hashes the table."""

    table: pa.Table                      # in the family's ``predictions_schema``
    usage: dict[str, Any]                # pipelines.backends.base.Usage as a dict
    config: dict[str, Any]               # what the run was given (published as the result's config)
    generation_key: str | None = None    # raw outputs' key (text generation), else None


class TaskFamily(Protocol):
    """One family of tasks (e.g. five-option clinical questions; windowed hypotension prediction)."""

    name: ClassVar[str]                          # the task spec's `family`
    kind: ClassVar[Kind]                         # the warehouse kind
    dataset: ClassVar[str]                       # slug of the dataset whose snapshot it reads
    settings_key: ClassVar[str]                  # the spec table that holds its settings
    settings_type: ClassVar[type[msgspec.Struct]]  # that table, typed (strict: unknown keys are errors)
    instances_file: ClassVar[str]                # e.g. "items.parquet", "windows.parquet"
    predictions_schema: ClassVar[pa.Schema]      # CONTRACT.md's Parquet columns for its kind

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
