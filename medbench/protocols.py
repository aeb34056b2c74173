"""The plug-in protocols: a ``Dataset``, a ``TaskFamily`` and a ``Backend``, with their optional hooks
declared (and defaulted) here.

Why declared: the engine and the Dagster layer call every hook of a plug-in unconditionally, so a
hook a plug-in leaves out is this module's default, never an attribute probed at run time. A
plug-in subclasses the protocol it implements (``class MyFamily(TaskFamily)``) to inherit the
defaults; the required members have none. Nothing here imports the project: plug-ins (built in or
installed, ``medbench.registry``) and the engine both depend on these shapes alone.

How a family is predicted: it declares *what* is asked (``problem``: a ``TextChoice`` of prompts
and a parser, or a ``FitAndScore`` of feature matrices), and the engine's generic solvers
(``pipelines.engine.solvers``) ask the evaluation's backend, whichever it is, to answer it. A
backend reads its own settings only; what a task caps (its token budget, its step length) is
handed to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Literal, Mapping, Protocol, Sequence, runtime_checkable

import msgspec
import numpy as np
import pyarrow as pa

from medbench.kind import Kind
from medbench.outcomes import (
    CheckOutcome, Instances, Log, Materialized, PromptItem, ReplayScore, Sampling, ScoreSummary, Usage,
)
from medbench.specs import DatasetSpec, ModelSpec, SpecError, TaskSpec

# Annotations only, never imported: ``Evaluation`` is ``medbench.evaluation.Evaluation`` (which
# holds a TaskFamily and a Backend) and ``DataDir`` is ``medbench.layout.DataDir``.
KindName = str  # a family's ``kind``: the name of its ``Kind`` (``medbench.kinds``: built-ins and the ``medbench.kinds`` entry points)

__all__ = ["Backend", "Dataset", "FitAndScore", "Kind", "KindName", "NotRunnable", "Problem", "TaskFamily", "TextChoice",
           "TextGenerator", "WindowScorer"]


class NotRunnable(RuntimeError):
    """The model cannot run on this machine (missing extra, no GPU, no API key); says why."""


# --------------------------------------------------------------------------- what a family asks


@dataclass(frozen=True)
class TextChoice:
    """A text-choice problem: prompts in, raw text stored under a generation key, parsed to predictions.

    ``max_new_tokens`` is the task's cap (a backend may lower it, never raise it); ``options`` the
    answers a prompt offers (a backend that draws one, the uniform rule, draws from these); ``parse``
    turns the raw outputs by instance id into the predictions table; ``config`` is what else the
    result records (e.g. the parser's version)."""

    prompts: Sequence[PromptItem]
    prompt_hash: str
    max_new_tokens: int
    temperature: float
    options: Sequence[str]
    parse: Callable[[dict[str, str]], pa.Table]
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FitAndScore:
    """A fit-and-score problem: a scorer is fitted on train (tuned on validation), then scores test.

    Inputs are float32 ``[n, steps]`` with NaN for missing steps, ``step_seconds`` apart; ``table``
    turns the test scores into the predictions table; ``seed`` is the fit seed (``seed_from`` says
    whose) and ``config`` what else the result records.

    ``finish`` (optional): what the family makes of the fitted scorer beyond its test scores, e.g. a
    logistic recalibration of a non-probability score fitted on the validation split. Called with
    the fitted scorer's validation scores, its ``probabilistic`` and the log, it returns the schema
    metadata the predictions table carries and what else the result's config records; the solver
    applies both, so the engine never learns what a family does with them."""

    train: tuple[np.ndarray, np.ndarray]
    validation: tuple[np.ndarray, np.ndarray]
    test: np.ndarray
    step_seconds: int
    table: Callable[[np.ndarray], pa.Table]
    seed: int
    config: dict[str, Any] = field(default_factory=dict)
    finish: Callable[[np.ndarray, bool, Log], tuple[dict[bytes, bytes], dict[str, Any]]] | None = None


@runtime_checkable
class Problem(Protocol):
    """Any other problem shape: one that solves itself (a plug-in kind's, e.g. a regression's
    fit-and-predict). ``solve`` asks ``ev.backend`` for what it needs, runs it and returns the
    predictions with their usage and config (``medbench.outcomes.Predicted``); the engine calls
    it as it calls its own solvers of the built-in shapes (``pipelines.engine.solvers``)."""

    def solve(self, ev: Any, data: Any, log: Log) -> Any: ...


@runtime_checkable
class JudgesAnswers(Protocol):
    """A self-solving problem whose answers may come from elsewhere and are then only judged: an official
    package's (``pipelines.official``, docs/official-tier.md). ``judge_answers`` grades ``answers``
    (instance id -> the kind's answer field) by the path ``solve`` grades the model's own answers on,
    its stored judge replies keyed by ``answers_key``, and returns the predictions with the judging's
    usage and config (``medbench.outcomes.Predicted``)."""

    def solve(self, ev: Any, data: Any, log: Log) -> Any: ...

    def judge_answers(self, ev: Any, data: Any, answers: Mapping[str, Any], answers_key: str, log: Log) -> Any: ...


# --------------------------------------------------------------------------- what a backend gives


class TextGenerator(Protocol):
    """Generates raw text for each prompt not yet in ``store`` (a GenerationStore) and appends it there."""

    def generate(self, items: Sequence[PromptItem], store: Any, log: Callable[[str], None]) -> Usage: ...


class WindowScorer(Protocol):
    """Windows in, one float per window out (higher = more likely the event ahead).

    ``probabilistic``: whether the score is a probability of the label (a fitted classifier's
    ``predict_proba``), taken as it is by calibration metrics; a rule's score is not (the default),
    and a family that reports calibration maps it to one (``FitAndScore.finish``). A scorer
    subclasses this protocol to inherit the default."""

    probabilistic: ClassVar[bool] = False

    def fit(self, train_inputs: np.ndarray, train_labels: np.ndarray, val_inputs: np.ndarray,
            val_labels: np.ndarray, seed: int) -> None: ...

    def score(self, inputs: np.ndarray) -> np.ndarray: ...

    def describe(self) -> dict[str, Any]: ...


# --------------------------------------------------------------------------- the plug-ins


class Dataset(Protocol):
    """One dataset (``specs/datasets/<slug>.toml``) and how its snapshot is made.

    A dataset module reads its real source (the upstream service, or a local mirror in the same
    format) or, in a demo data directory, a generated stand-in in exactly that format, and writes a
    content-addressed snapshot under ``<data>/snapshots/<slug>/``; the engine then moves the
    dataset's ``CURRENT`` pointer to it. What a snapshot must hold can depend on the tasks that read
    it: those come as ``options``, gathered from the families' ``snapshot_options``."""

    slug: ClassVar[str]

    def materialize(self, spec: DatasetSpec, data: DataDir, options: Mapping[str, Any], log: Log) -> Materialized:
        """Write the snapshot into ``data.snapshots(slug)`` (demo data when ``data.demo_or_real() == 'demo'``)."""
        ...


class TaskFamily(Protocol):
    """One family of tasks (e.g. five-option clinical questions; windowed hypotension prediction).

    A declaration plus a few small callables (Inspect's Task, HELM's scenario -> adapter -> metric):
    which dataset it reads, how its instances are built from that dataset's snapshot, what it asks
    a model (``problem``), how predictions become a typed score summary, what its checks are. Each
    family maps onto one of the warehouse's kinds, which is all the API knows about tasks."""

    name: ClassVar[str]                          # the task spec's `family`
    kind: ClassVar[KindName]                     # the warehouse kind (``medbench.kinds.kind(name)``)
    # the predictions column whose values are the resampling clusters of every interval (rank
    # intervals, /v1/compare, the baseline difference; recorded in the warehouse's ``tasks`` table);
    # None: items are independent, each its own cluster
    cluster_column: ClassVar[str | None]
    dataset: ClassVar[str]                       # slug of the dataset whose snapshot it reads
    settings_key: ClassVar[str]                  # the spec table that holds its settings
    settings_type: ClassVar[type[msgspec.Struct]]  # that table, typed (strict: unknown keys are errors)
    instances_file: ClassVar[str]                # e.g. "items.parquet", "windows.parquet"
    predictions_schema: ClassVar[pa.Schema]      # its kind's ``schema`` first, then its own columns
    instance_check_names: ClassVar[tuple[str, ...]]    # names of the CheckOutcomes instance_checks returns
    prediction_check_names: ClassVar[tuple[str, ...]]  # names of the CheckOutcomes prediction_checks returns

    # Optional, with defaults: what the UI says of each check (default: its name in words), and
    # whether ``score_replay`` scores a file of raw outputs (``medbench score``).
    check_descriptions: ClassVar[Mapping[str, str]] = {}
    scores_replays: ClassVar[bool] = False
    # the splits an official package scores: the test split's instances (``public_instances``), and
    # where a family's finish fits on validation scores (a recalibration, thresholds), the validation
    # split's inputs too (``public_validation_instances``); a family that adds one gets new official run ids
    official_splits: ClassVar[tuple[str, ...]] = ("test",)

    def snapshot_options(self, task: TaskSpec) -> dict[str, Any]:
        """What the dataset's snapshot must honour for this task (e.g. a row count, a track name)."""
        ...

    def parser_version(self, task: TaskSpec) -> str | None:
        """The parser a result records in ``versions.parser`` (None where nothing is parsed)."""
        ...

    def check_settings(self, task: TaskSpec) -> None:
        """Cross-field validation of a decoded spec; raises SpecError (or ValueError) naming the key."""
        ...

    def build_instances(self, task: TaskSpec, snapshot: Path, out: Path, log: Log) -> Instances:
        """Build the task version's instances from the dataset snapshot at ``snapshot`` into ``out``."""
        ...

    def instance_checks(self, task: TaskSpec, instances: Path) -> list[CheckOutcome]:
        """Checks on the built instances (row counts, split disjointness, prevalence, ...)."""
        ...

    def expected_ids(self, task: TaskSpec, instances: Path) -> set[str]:
        """The instance ids an evaluation must predict exactly once."""
        ...

    def problem(self, ev: Evaluation, instances: Path) -> TextChoice | FitAndScore | Problem:
        """What the evaluation's model is asked, for the engine's solver of that shape."""
        ...

    def score(self, task: TaskSpec, predictions: pa.Table, instances: Path) -> ScoreSummary:
        """Metrics with CIs and the typed extras, from the predictions (never calls a model)."""
        ...

    def prediction_checks(self, task: TaskSpec, predictions: pa.Table, expected: set[str]) -> list[CheckOutcome]:
        """Checks on one evaluation's predictions (every instance once, finite scores, ...)."""
        ...

    def planned_items(self, task: TaskSpec) -> int | None:
        """The instance count a plan assumes before the instances are built (None: unknown)."""
        return None

    def token_cap(self, task: TaskSpec) -> int | None:
        """The tokens a model may write per instance, for cost estimates (None: it writes no text)."""
        return None

    def baseline_model(self, task: TaskSpec) -> str | None:
        """The reference model every result of ``task`` is compared with at publish time (the hook keeps
        its published name; docs/concepts.md, "Glossary"); None: no comparison."""
        return None

    def judge(self, task: TaskSpec, demo: bool = False) -> str | None:
        """The slug of the model that grades ``task``'s answers (a rubric task's judge; ``demo``: on the
        demo data, where a task may name a simulated one), or None where no model grades. A judged
        task's run ids hold the judge's spec hash, so each judge's result is its own."""
        return None

    def participant_flow(self, task: TaskSpec, instances: Path) -> list[dict[str, Any]] | None:
        """The task's participant flow as built (TRIPOD+AI: cases -> exclusions -> cohort -> windows ->
        splits), published with the task as labelled counts in order (``medbench.figures.FlowStep``:
        ``{label, count, unit, level, note}``); None: the family reports none, or its instances are not built."""
        return None

    def public_instances(self, task: TaskSpec, snapshot: Path, instances: Path) -> list[dict[str, Any]]:
        """What an official package is given (``pipelines.official``): one JSON-able dict per instance
        it must answer (``expected_ids``), with ``instance_id`` and the task's public inputs only,
        never a label or an answer. Families without one take no official packages."""
        raise NotImplementedError(f"family {self.name!r} takes no official packages")

    def public_validation_instances(self, task: TaskSpec, snapshot: Path, instances: Path) -> list[dict[str, Any]]:
        """The validation split's public inputs an official package also scores, shaped as
        ``public_instances`` (never a label), where ``official_splits`` names ``validation``: its
        scores feed the family's ``FitAndScore.finish`` exactly as a backend's validation scores do."""
        raise NotImplementedError(f"family {self.name!r} gives official packages no validation inputs")

    def score_replay(self, task: TaskSpec, snapshot: Path, outputs: Path) -> ReplayScore:
        """Score a file of raw outputs locally (``medbench score``); only where ``scores_replays``."""
        raise NotImplementedError(f"family {self.name!r} does not score raw outputs")


class Backend(Protocol):
    """What serves a model spec's ``backend``: its settings' type, its pool, and the problems it answers.

    A backend answers a ``TextChoice`` (``text_generator``) or a ``FitAndScore`` (``window_scorer``)
    or both; the default of the one it does not answer says so (``NotRunnable``). It reads its own
    settings only: a task's cap arrives as an argument."""

    name: ClassVar[str]                # the model spec's `backend`
    settings_type: ClassVar[Any]       # the type its `[settings]` table decodes into

    def pool(self, model: ModelSpec) -> str:
        """The resource pool a run of ``model`` takes a slot in: ``gpu``, ``api`` or ``cpu``."""
        return "cpu"

    def not_runnable_reason(self, model: ModelSpec, data: DataDir | None = None) -> str | None:
        """Why ``model`` cannot run on this machine (on the data directory ``data``, when given: a
        demo-only model never runs on real data), or None when it can."""
        return None

    def demo_only(self, model: ModelSpec) -> bool:
        """Whether ``model`` answers the generated demo items only (never listed or run on real data)."""
        return False

    def check_spec(self, path: Path, spec: ModelSpec) -> ModelSpec:
        """Validate (and complete, e.g. pin a file's content) a decoded model spec; raises SpecError."""
        return spec

    def watched_files(self, model: ModelSpec) -> list[Path]:
        """Files besides the spec whose change must reload the specs (a replay's outputs file)."""
        return []

    def published(self, settings: Any, *, keep_defaults: bool = True) -> dict[str, Any]:
        """The settings as a result publishes them (``config.backend_settings``: every key, defaults
        included; the catalog's model spec: defaults omitted), secrets removed. Required: every
        result records it, so a backend without it fails at registration, not in a run."""
        ...

    def max_new_tokens(self, model: ModelSpec, cap: int) -> int:
        """The task's token cap, lowered where the model's own settings set a lower one."""
        return cap

    def devices(self, model: ModelSpec) -> int:
        """The devices (GPUs) a run of ``model`` holds, for cost estimates."""
        return 1

    def fit_seed(self, model: ModelSpec) -> int | None:
        """The model's own fit seed, where its settings name one."""
        return None

    def text_generator(self, model: ModelSpec, data: DataDir, *, max_new_tokens: int,
                       options: Sequence[str], sampling: Sampling | None = None) -> TextGenerator:
        """The generator that answers a ``TextChoice`` with ``model`` (at most ``max_new_tokens`` each).

        ``sampling``: given only where a task decodes by sampling (a rubric judge at a temperature
        above 0); a backend that cannot sample may raise ``NotRunnable``. Absent, decoding is greedy."""
        raise NotRunnable(f"{model.slug}: backend {self.name!r} does not answer choice tasks")

    def window_scorer(self, model: ModelSpec, step_seconds: int) -> WindowScorer:
        """The scorer that answers a ``FitAndScore`` with ``model``."""
        raise NotRunnable(f"{model.slug}: backend {self.name!r} does not score windows")


def spec_error(path: Path, message: str) -> SpecError:
    """A SpecError naming the spec file (for ``Backend.check_spec``)."""
    return SpecError(f"{path}: {message}")
