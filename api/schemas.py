"""Every JSON body the API sends, as msgspec Structs named after the objects of docs/api.md.

One Struct per contract object keeps the field names, their order, their types and which of them
may be null in one reviewable place; the OpenAPI document is generated from these same classes, so
the document and the bodies cannot drift apart. Fields added since are marked as additions (a body may gain fields, never lose or rename
one: docs/api.md, "Routes").
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

import msgspec

from medbench.figures import Figure, FlowStep
from medbench import records
from medbench.records import PluginVersion, Provenance  # the records' own Structs: same fields, same JSON
from api.release_schemas import (  # noqa: F401  (api.schemas.X for every body)
    KeyList, PublicKey, Release, ReleasePage, ReleaseSummary, Signature, Withdrawn,
)
from api.judge_schemas import CriterionAgreement, JudgesCompared, JudgeWarning  # noqa: F401  (api.schemas.X)
from api.metric_schemas import (  # noqa: F401  (api.schemas.X for every body)
    Breakdown, DetectableDifference, Judge, Metric, Subgroup, UsagePart, Withheld,
)
from medbench.submissions.records import HistoryEntry, Submission  # noqa: F401  (bodies of the submission routes)

ModelType = records.ModelType
ContaminationStatus = Literal["declared", "possible", "unlikely", "unknown"]
Tier = Literal["baseline", "official"]
SubmissionState = Literal["received", "validated", "awaiting_package", "awaiting_approval", "queued", "running",
                          "evaluated", "failed", "rejected"]  # medbench.submissions.STATES, as a schema enum


class Error(msgspec.Struct):
    error: str
    message: str


class Model(msgspec.Struct):
    """The model as shown in leaderboard rows and result summaries."""

    slug: str
    name: str
    type: ModelType
    provider: str


class ModelDetail(records.ModelCard, kw_only=True):
    """The model as shown in a full Result."""

    # the card's fields first (slug, name, type, provider, provider_model_id, revision)
    release_date: dt.date | None
    knowledge_cutoff: dt.date | None


class Row(msgspec.Struct):
    rank: int
    run_id: str
    task: str
    model: Model
    tier: Tier
    metric: Metric
    n: int
    parse_rate: float | None
    cost_usd: float
    eval_date: dt.date
    url: str
    demo: bool
    contamination: bool | None  # true for declared or possible, false for unlikely, null for unknown
    contamination_status: ContaminationStatus
    contamination_basis: str  # what decided the status, in words (a declaration, a cutoff, a release date)
    rank_low: int  # hull of the simultaneous 95% rank set (Mogstad et al. 2024) and the marginal interval
    rank_high: int
    tied_with_leader: bool  # the simultaneous rank set contains 1
    marginal_rank_low: int  # percentile interval of the joint bootstrap's replicate ranks (not valid at ties)
    marginal_rank_high: int
    withheld: list[Withheld]  # the result's metrics left unpublished (undefined or degenerate), and why


class ResultSummary(msgspec.Struct):
    run_id: str
    task: str
    model: Model
    tier: Tier
    metric: Metric
    n: int
    parse_rate: float | None
    cost_usd: float
    eval_date: dt.date
    url: str
    demo: bool
    contamination: bool | None
    contamination_status: ContaminationStatus
    contamination_basis: str
    superseded_by: str | None  # addition: lets a listing tell current results from replaced ones
    # current | superseded | withdrawn (as of the release asked for): a listed withdrawn result never looks current
    status: Literal["current", "superseded", "withdrawn"]


class Versions(records.Versions, omit_defaults=False):
    pass  # the record's versions; ``plugins: []`` is always in the body (the record omits it). No docstring:
    # it would become the JSON Schema's description, and MCP's tools/list is pinned


class Usage(records.UsageRecord):
    pass  # the record's usage, named as the API has always named it (no docstring, as above)


class BaselineComparison(msgspec.Struct):
    """A result's paired difference to its task's baseline model (``baseline_comparisons`` table)."""

    baseline_run_id: str
    baseline_model: str
    metric: str
    difference: float  # this result's metric minus the baseline's, on the same test items
    ci_low: float
    ci_high: float
    p_value: float
    method: str
    p_at_floor: bool  # p is the bootstrap's floor 2/(R+1): read "p <= p_value", not an exact value


class UnparsedOutput(msgspec.Struct):
    """One output the parser could not read (choice tasks), cut to its first 300 characters."""

    instance_id: str
    output: str


class Result(msgspec.Struct, kw_only=True):
    run_id: str
    task: str
    model: ModelDetail
    tier: Tier
    metric: Metric
    n: int
    parse_rate: float | None
    cost_usd: float
    eval_date: dt.date
    url: str
    demo: bool
    contamination: bool | None
    contamination_status: ContaminationStatus
    contamination_basis: str
    metrics: list[Metric]
    config: dict[str, Any]
    versions: Versions
    usage: Usage
    price_table_date: dt.date
    bibtex: str
    predictions_url: str
    predictions_sha256: str
    superseded_by: str | None
    dataset: str  # addition: the dataset slug to cite with this result
    extras: dict[str, Any]  # addition: task-specific detail (ROC points, accuracy by category, ...)
    subgroups: dict[str, list[Subgroup]]  # {field: [Subgroup]} (e.g. sex, age band) with intervals; {}: none
    breakdowns: dict[str, list[Breakdown]]  # {field: [Breakdown]} (e.g. category), per-group intervals; {}: none
    provenance: Provenance  # who stands behind it: all null for medbench's own runs
    versus_baseline: BaselineComparison | None = None  # addition: paired difference to the task's baseline
    breakdowns_caveat: str | None = None  # addition: the multiplicity caveat, when there are breakdowns
    unparsed_sample: list[UnparsedOutput] | None = None  # parsed kinds: the first 20 unparsed outputs; else null
    figures: list[Figure] = []  # addition: what the task's kind declares (docs/api.md), drawn generically
    # docs/api.md, "Releases, withdrawals and supersession": current | superseded | withdrawn (as of the release asked for)
    status: Literal["current", "superseded", "withdrawn"]
    withdrawn: Withdrawn | None  # {reason, date} when a maintainer withdrew the result
    supersedes: list[str]  # the older runs of the same model and task version this one replaced
    # over the whole record but the host-dependent, derived and status fields (docs/api.md
    # "Signatures"); null for a result published before signing
    signature: Signature | None
    withheld: list[Withheld]  # metrics left out of `metrics` (undefined or degenerate), and why
    judge: Judge | None  # rubric tasks: the judge model that graded it (docs/api.md); null otherwise


class Dataset(records.DatasetCard, kw_only=True):
    # the card's fields first (slug, name, license, license_url, citation, doi, public_since); no
    # docstring: it would become the JSON Schema's description, and MCP's tools/list is pinned
    source: dict[str, Any]
    description: str  # addition
    snapshot_id: str | None  # addition: content hash of the snapshot the published results used


class DatasetList(msgspec.Struct):
    datasets: list[Dataset]


class Task(msgspec.Struct):
    slug: str
    version: int
    dataset: str
    kind: str
    primary_metric: str
    preview: bool
    n_results: int
    spec_hash: str
    ref: str  # addition: "slug@version", the form every `task` parameter accepts
    title: str  # addition


class TaskDetail(msgspec.Struct):
    slug: str
    version: int
    dataset: str
    kind: str
    primary_metric: str
    preview: bool
    n_results: int
    spec_hash: str
    ref: str
    title: str
    description: str  # addition
    spec: dict[str, Any]
    # addition: labelled counts in order, as the family declares them; None: none, or an unknown shape
    participant_flow: list[FlowStep] | None = None
    # smallest difference in the primary metric detectable with 80% power at alpha 0.05; null with < 2 results
    detectable_difference: DetectableDifference | None = None


class TaskList(msgspec.Struct):
    tasks: list[Task]


class Leaderboard(msgspec.Struct, omit_defaults=True):
    task: str
    metric: str  # the metric ranked by (``?metric=``, default the primary), in its direction
    rows: list[Row]
    rank_method: str  # how rank_low/rank_high were computed, or that no rank set is available
    # addition: rubric tasks, the shown rows whose judge failed its scorecard (docs/api.md); absent when none
    judge_warnings: list[JudgeWarning] = []


class ResultPage(msgspec.Struct):
    results: list[ResultSummary]
    total: int
    limit: int
    offset: int


class Lookup(msgspec.Struct, omit_defaults=True):
    status: Literal["evaluated", "not_evaluated"]
    result: Result | None
    # the pair's withdrawn run ids (a withdrawn result is never the answer); absent when there are none
    withdrawn: list[str] = []


class Stats(msgspec.Struct):
    datasets: int
    tasks: int
    models: int
    results: int
    total_cost_usd: float
    reuses: int
    warehouse_version: str
    demo: bool  # addition: whether this data directory holds demo results
    release: str | None = None  # the release answered from (the current one: the warehouse version)


class Health(msgspec.Struct):
    status: Literal["ok"]
    warehouse_version: str


class Compare(msgspec.Struct):
    """``GET /v1/compare``: a paired comparison of two results of one task on their shared items."""

    a: str
    b: str
    task: str
    metric: str
    n_shared: int
    difference: float  # metric(a) - metric(b) on the shared items
    ci_low: float
    ci_high: float
    p_value: float
    method: str
    value_a: float  # addition: metric(a) on the shared items
    value_b: float  # addition
    replicates: int  # addition: bootstrap replicates (the task's own setting)
    seed: int  # addition
    dropped_replicates: int  # addition: AUROC replicates left out for holding one class only
    a_only_correct: int | None  # addition: accuracy tasks, discordant pairs with only a right
    b_only_correct: int | None  # addition: ... with only b right
    p_at_floor: bool  # p is its procedure's floor (a bootstrap's 2/(R+1)): read "p <= p_value"; never for exact McNemar
    direction: Literal["higher", "lower", "target"] = "higher"  # addition: which way the metric is better
    better: Literal["a", "b"] | None = None  # addition: the result the whole interval favours (docs/api.md)
    # addition: rubric results graded by two judges: their agreement on the same answers (docs/api.md)
    judges: JudgesCompared | None = None


class Evaluation(msgspec.Struct):
    """One current result of a model: the task version and the run to cite (``/v1/models``)."""

    task: str
    run_id: str


class ModelInfo(records.ModelCard, kw_only=True):
    """A model as ``/v1/models`` lists it: the full model and its current results."""

    # the card's fields first (slug, name, type, provider, provider_model_id, revision)
    release_date: dt.date | None
    knowledge_cutoff: dt.date | None
    evaluations: list[Evaluation]


class ModelPage(msgspec.Struct):
    models: list[ModelInfo]
    total: int
    limit: int
    offset: int


class PredictionsLink(msgspec.Struct):
    """The MCP ``predictions_url`` tool's answer: where a result's per-item predictions are, and their checksum."""

    run_id: str
    task: str
    predictions_url: str
    predictions_sha256: str


# -- the write path (docs/submitting.md); the Submission itself is the store's public record


class AlreadyEvaluated(msgspec.Struct):
    """``POST /v1/submissions`` when rule one answers every requested task: nothing is queued."""

    status: Literal["already_evaluated"]
    results: list[Result]


class SubmissionPage(msgspec.Struct):
    submissions: list[Submission]
    total: int
    limit: int
    offset: int


class SubmissionResources(msgspec.Struct):
    pool: Literal["cpu", "gpu"]
    memory_gib: float
    wall_minutes: float


class SubmissionBody(msgspec.Struct):
    """What ``POST /v1/submissions`` takes (documented here; decoded strictly by the validator):
    ``model`` is a model spec without ``provider``, ``tasks`` and ``price``."""

    model: dict[str, Any]
    tasks: list[str]
    tier: Tier = "baseline"
    package_sha256: str | None = None
    resources: SubmissionResources | None = None

