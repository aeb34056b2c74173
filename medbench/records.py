"""The result record: everything medbench publishes about one run, as one typed document.

The pipeline writes one ``result.json`` per run next to its predictions; the publisher loads
them into DuckDB and the API serves them. A single Struct shared by both sides keeps the JSON
names of a Result (docs/api.md, "Routes") in one place.

Its file name is shared on purpose: the published data's module; the route or command of the same
name serves it.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, Literal

import msgspec

ContaminationStatus = Literal["declared", "possible", "unlikely", "unknown"]
# the ``contamination`` flag existing clients read: true for declared or possible, false for
# unlikely, null for unknown
CONTAMINATION_FLAG: dict[str, bool | None] = {"declared": True, "possible": True, "unlikely": False, "unknown": None}
_LEGACY_STATUS: dict[bool | None, ContaminationStatus] = {True: "possible", False: "unlikely", None: "unknown"}


ModelType = Literal["llm", "ml", "rule"]


class ModelCard(msgspec.Struct, frozen=True, kw_only=True):
    """What names a model wherever it is described: which model, of what type, from whom, at which revision.

    Declared once for the same reason as ``DatasetCard``: the model spec (``medbench.specs.ModelSpec``)
    and the API's model bodies (``api.schemas.ModelDetail``, ``ModelInfo``) start with these fields,
    with these types, in this order. (``ModelRef``, the result record's copy, keeps ``type`` a plain
    string: records written by any earlier medbench must still decode.)
    """

    slug: str
    name: str
    type: ModelType
    provider: str
    provider_model_id: str
    revision: str


class DatasetCard(msgspec.Struct, frozen=True, kw_only=True):
    """What every description of a dataset says first: its name, its licence and how to cite it.

    Declared once because three layers describe a dataset with these same fields and types, in this
    order: its spec file (``medbench.specs.DatasetSpec``), its published row
    (``warehouse.schema.DatasetRow``) and its API body (``api.schemas.Dataset``); each adds its own
    fields after them (docs/concepts.md, "The layers").
    """

    slug: str
    name: str
    license: str
    license_url: str
    citation: str
    doi: str
    public_since: dt.date


class ModelRef(msgspec.Struct, frozen=True):
    slug: str
    name: str
    type: str
    provider: str
    provider_model_id: str
    revision: str
    release_date: dt.date | None = None
    knowledge_cutoff: dt.date | None = None


class Estimate(msgspec.Struct):
    """A metric's value with its 95% interval: how every published number starts, in a result record
    (``MetricValue``) and in an API body (``api.schemas.Metric``), which then say how the interval
    was computed, each with its own types (a body's ``method`` is never null; an old record's may be)."""

    name: str
    value: float
    ci_low: float
    ci_high: float


class MetricValue(Estimate, frozen=True):
    # how [ci_low, ci_high] was computed: "wilson", "bootstrap-percentile" or
    # "cluster-bootstrap-percentile"; None in results written before methods were recorded
    method: str | None = None
    # which way is better, for ranking by this metric: "higher", "lower" (e.g. Brier) or "target"
    # (closest to ``target`` is best, e.g. calibration slope 1); older records are "higher"
    direction: str = "higher"
    target: float | None = None
    # bootstrap replicates the interval was computed from (the others undefined there); 0 for an
    # interval that is not a bootstrap's (Wilson: analytic, no replicates); None only in results
    # written before this was recorded (published through ``replicates_published``)
    replicates_kept: int | None = None
    # the rubric kind's primary metric: the interval without the judge's resampling (items alone);
    # [ci_low, ci_high] is then the two-stage one (docs/statistics.md); None for every other metric
    ci_low_items_only: float | None = None
    ci_high_items_only: float | None = None


class Subgroup(msgspec.Struct, frozen=True, kw_only=True):
    """One subgroup of a result's test items (e.g. sex F), its metrics with their own intervals."""

    group: str
    n: int  # items (windows) in the subgroup
    n_subjects: int  # distinct resampling clusters (patients) in it
    metrics: list[MetricValue]
    caveat: str | None = None  # e.g. fewer than 30 subjects: wide, unstable intervals
    # replicates holding both classes in the subgroup: all its intervals use them (0: no intervals)
    replicates_kept: int | None = None
    withheld_reason: str | None = None  # set with metrics == []: too few clusters for an interval


class Breakdown(msgspec.Struct, frozen=True, kw_only=True):
    """The primary metric on one group of items (a category, a purpose, a source), its interval per group."""

    group: str
    n: int
    metric: MetricValue


def replicates_published(method: str | None, kept: int | None, replicates: int | None) -> int:
    """``replicates_kept`` as published, always an int (docs/statistics.md, "Intervals with few
    subjects"): the count recorded with the interval; else, for a bootstrap's interval, the
    ``replicates`` drawn (a bootstrap of a mean over items defines it in every replicate); else 0:
    an analytic interval (Wilson), no replicates behind it."""
    if kept is not None:
        return int(kept)
    if method and "bootstrap" in method and replicates:
        return int(replicates)
    return 0


def metric_order_value(m: MetricValue | None) -> float:
    """The number a leaderboard sorts ascending to rank by ``m`` in its direction: -value (higher),
    value (lower), |value - target| (target); NaN or missing sorts last. One definition for the
    publisher's rank rows and the API's order, so the two always agree."""
    if m is None or math.isnan(m.value):
        return math.inf
    if m.direction == "lower":
        return m.value
    if m.direction == "target":
        return abs(m.value - (m.target if m.target is not None else 0.0))
    return -m.value


class PluginVersion(msgspec.Struct, frozen=True):
    """A distribution other than medbench whose code a result used (a family, dataset, kind or backend)."""

    name: str           # the distribution's name
    version: str
    files_sha256: str   # of its importable files as they are on disk (``pipelines.engine.plugin_identity``)


class Versions(msgspec.Struct, frozen=True, omit_defaults=True):
    task_spec_hash: str
    model_spec_hash: str
    dataset_snapshot: str
    parser: str | None
    code_revision: str
    libraries: dict[str, str]
    # plug-in code the result used; empty (and so absent from the record, which keeps every built-in
    # result's bytes) when it used medbench's own only. Non-empty, it is part of the run id.
    plugins: list[PluginVersion] = []


class UsagePart(msgspec.Struct, frozen=True, kw_only=True):
    """One part of a judged task's usage: the answering model's or the judge's, with its own cost."""

    # The API's body too (api.schemas): this docstring is the JSON Schema's description MCP lists.

    prompt_tokens: int | None
    completion_tokens: int | None
    wall_seconds: float
    cost_usd: float


class UsageRecord(msgspec.Struct, frozen=True):
    prompt_tokens: int | None
    completion_tokens: int | None
    wall_seconds: float
    hardware: str
    # a task graded by a judge model: the answering model's and the judge's usage apart (the totals
    # above and the result's ``cost_usd`` are their sums); None for every other task
    answering: UsagePart | None = None
    judging: UsagePart | None = None


class JudgeRef(msgspec.Struct, frozen=True, kw_only=True):
    """The judge that graded a result (rubric tasks): its model slug and revision, the sha256 of its
    prompt template and how many times it graded each answer."""

    model: str
    revision: str
    prompt_sha256: str
    samples: int


class Provenance(msgspec.Struct, frozen=True, kw_only=True):
    """Who stands behind a result: all null for medbench's own runs; for a submitted package (the
    official tier) its submitter, the submission, the wheel's sha256 and the sandbox policy."""

    # The API's body too (api.schemas): this docstring is the JSON Schema's description MCP lists.
    # submitted_by is a token's owner; sandbox the policy the package ran under.

    submitted_by: str | None = None
    submission_id: str | None = None
    package_sha256: str | None = None
    sandbox: str | None = None


class Withheld(msgspec.Struct, frozen=True):
    """A metric left out of ``metrics`` because it is undefined or degenerate (never published as a number)."""

    # The API's body too (api.schemas): this docstring is the JSON Schema's description MCP lists.
    # Why it was withheld: medbench.stats.validity.

    name: str
    reason: str


class ResultRecord(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    task: str  # slug@version
    dataset: str
    model: ModelRef
    tier: str
    demo: bool
    metrics: list[MetricValue]  # primary first
    n: int
    parse_rate: float | None
    cost_usd: float
    eval_date: dt.date
    created_at: dt.datetime
    contamination: bool | None
    config: dict[str, Any]
    versions: Versions
    usage: UsageRecord
    price_table_date: dt.date
    predictions_sha256: str
    generation_key: str | None = None
    extras: dict[str, Any] = {}
    # what decided ``contamination``, in words; results written before statuses hold
    # "knowledge_cutoff" | "release_date" | None here (``contamination_of`` reads both)
    contamination_basis: str | None = None
    contamination_status: ContaminationStatus | None = None  # None: written before statuses
    # {field: [Subgroup]}: score tasks' subgroups (sex, age band), each with intervals; {} when none
    subgroups: dict[str, list[Subgroup]] = {}
    # {field: [Breakdown]}: per-group accuracy (category, purpose, source); per-group intervals, not simultaneous
    breakdowns: dict[str, list[Breakdown]] = {}
    provenance: Provenance = msgspec.field(default_factory=Provenance)
    withheld: list[Withheld] = []  # metrics never published as numbers (undefined or degenerate), with why
    judge: JudgeRef | None = None  # the judge model of a task graded by one (rubric); None otherwise

    @property
    def primary(self) -> MetricValue:
        return self.metrics[0]

    def metric(self, name: str) -> MetricValue | None:
        """The metric of this name, or None when the run did not publish it."""
        return next((m for m in self.metrics if m.name == name), None)


def encode_record(record: ResultRecord) -> bytes:
    return msgspec.json.encode(record)


def decode_record(data: bytes | str) -> ResultRecord:
    return msgspec.json.decode(data, type=ResultRecord)


def contamination_of(r: ResultRecord) -> tuple[ContaminationStatus, str]:
    """(status, basis in words) of a result, also of one written before statuses were recorded.

    Those held only the flag and which date decided it (``knowledge_cutoff`` | ``release_date``).
    The rule was the date one of today without declarations (none existed), so the flag maps onto
    the status exactly; the words name the date from the record's own model."""
    if r.contamination_status is not None:
        return r.contamination_status, r.contamination_basis or ""
    status = _LEGACY_STATUS[r.contamination]
    when = {"knowledge_cutoff": ("knowledge cutoff", r.model.knowledge_cutoff),
            "release_date": ("release date", r.model.release_date)}.get(r.contamination_basis or "")
    if status == "unknown" or when is None or when[1] is None:
        return status, "no knowledge cutoff or release date is known for the model"
    side = "before" if status == "unlikely" else "on or after"
    return status, f"{when[0]} {when[1]} is {side} {r.dataset} went public"
