"""The plain results each step hands back: what a dataset made, what a family built, predicted and
scored, and what a check decided.

Why in the core: the engine writes them, the Dagster layer turns them into metadata and check
results, the families and datasets make them; as plain data they let each of those depend on the
shape alone, never on one another.
"""

from __future__ import annotations

import hashlib
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import msgspec
import pyarrow as pa

from medbench.old_spellings import renamed

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
class Materialized:
    """What making a dataset snapshot produced, for asset metadata and logs."""

    snapshot_id: str
    path: Path
    rows: int
    details: dict = field(default_factory=dict)


def __getattr__(name: str) -> Any:
    """An old spelling of a name here, for plug-ins that import it: ``medbench.old_spellings``."""
    return renamed(__name__, name)


@dataclass(frozen=True)
class Instances:
    """What building a task version's instances produced (for asset metadata and logs)."""

    path: Path            # the instances file (Parquet) of this task version and snapshot
    rows: int
    details: dict[str, Any] = field(default_factory=dict)
    snapshot_id: str = ""  # filled in by the engine (pipelines.engine.inputs.materialize_instances)


@dataclass
class Usage:
    """Usage of one run; cost is derived from it with the dated price table."""

    wall_seconds: float = 0.0
    device_seconds: float = 0.0
    hardware: str = field(default_factory=lambda: f"cpu ({platform.machine()})")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def _sum(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def combined_usage(answering: Usage, judging: Usage, wall_seconds: float | None = None) -> dict[str, Any]:
    """A judged result's usage (a rubric task's): the totals (the answering's hardware; the wall time
    given, else the parts' sum; ``cost_usd`` is derived from them), and each part apart
    (``usage.answering``, ``usage.judging``), whether a backend or an official package answered."""
    wall = answering.wall_seconds + judging.wall_seconds if wall_seconds is None else wall_seconds
    usage = asdict(Usage(wall_seconds=wall, device_seconds=answering.device_seconds + judging.device_seconds,
                         hardware=answering.hardware,
                         prompt_tokens=_sum(answering.prompt_tokens, judging.prompt_tokens),
                         completion_tokens=_sum(answering.completion_tokens, judging.completion_tokens)))
    usage["answering"], usage["judging"] = asdict(answering), asdict(judging)
    return usage


@dataclass(frozen=True)
class PromptItem:
    instance_id: str
    prompt: str  # the user message; chat models apply their own chat template to it


@dataclass(frozen=True)
class Sampling:
    """Decoding by sampling at ``temperature`` instead of greedily: a rubric judge sampled
    ``judge_samples`` times at its spec's temperature (docs/adding-a-task.md, "The rubric kind").

    Each prompt draws with its own seed, derived from ``seed`` and its instance id (a judge sample's
    id carries the sample's number): the samples of one answer differ, and a rerun draws the same.
    """

    temperature: float
    seed: int = 0

    def item_seed(self, instance_id: str) -> int:
        digest = hashlib.sha256(f"{self.seed}:{instance_id}".encode()).digest()
        return int.from_bytes(digest[:4], "big") >> 1  # below 2**31: every backend's seed type takes it

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0


@dataclass(frozen=True)
class Predicted:
    """What predicting an evaluation hands back to the engine, which writes and hashes the table."""

    table: pa.Table                      # in the family's ``predictions_schema``
    usage: dict[str, Any]                # Usage as a dict
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


@dataclass
class ScoreSummary:
    """The common shape of a scored run, whatever the task family: what a family's ``score`` returns."""

    metrics: list[tuple]  # (name, value, ci_low, ci_high[, method[, direction[, target]]]), primary first
    n: int
    parse_rate: float | None
    extras: msgspec.Struct | None = None  # the family's typed extras (published as the result's `extras`)
    subgroups: dict[str, list] = field(default_factory=dict)  # {field: [medbench.records.Subgroup]}
    breakdowns: dict[str, list] = field(default_factory=dict)  # {field: [medbench.records.Breakdown]}
    withheld: list[tuple[str, str]] = field(default_factory=list)  # (name, reason): medbench.stats.validity

    def extras_json(self) -> dict[str, Any]:
        """The extras as the result record stores them (plain JSON values, in field order)."""
        return msgspec.to_builtins(self.extras) if self.extras is not None else {}
