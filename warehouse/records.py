"""The result record: everything medbench publishes about one run, as one typed document.

The pipeline writes one ``result.json`` per run next to its predictions; the publisher loads
them into DuckDB and the API serves them. A single Struct shared by both sides keeps the JSON
names of CONTRACT.md in one place.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec


class ModelRef(msgspec.Struct, frozen=True):
    slug: str
    name: str
    type: str
    provider: str
    provider_model_id: str
    revision: str
    release_date: dt.date | None = None
    knowledge_cutoff: dt.date | None = None


class MetricValue(msgspec.Struct, frozen=True):
    name: str
    value: float
    ci_low: float
    ci_high: float
    # how [ci_low, ci_high] was computed: "wilson", "bootstrap-percentile" or
    # "cluster-bootstrap-percentile"; None in results written before methods were recorded
    method: str | None = None
    # which way is better: "higher", "lower" (Brier) or "target" (calibration slope 1, intercept 0:
    # the closer to ``target`` the better); results written before directions were recorded read "higher"
    direction: str = "higher"
    target: float | None = None


class Subgroup(msgspec.Struct, frozen=True, kw_only=True):
    """One subgroup of a result's test items (e.g. sex F), its metrics with their own intervals."""

    group: str
    n: int  # items (windows) in the subgroup
    n_subjects: int  # distinct resampling clusters (patients) in it
    metrics: list[MetricValue]
    caveat: str | None = None  # e.g. fewer than 30 subjects: wide, unstable intervals


class Breakdown(msgspec.Struct, frozen=True, kw_only=True):
    """The primary metric on one group of items (a category, a purpose, a source), its interval per group."""

    group: str
    n: int
    metric: MetricValue


class Versions(msgspec.Struct, frozen=True):
    task_spec_hash: str
    model_spec_hash: str
    dataset_snapshot: str
    parser: str | None
    code_revision: str
    libraries: dict[str, str]


class UsageRecord(msgspec.Struct, frozen=True):
    prompt_tokens: int | None
    completion_tokens: int | None
    wall_seconds: float
    hardware: str


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
    contamination_basis: str | None = None  # "knowledge_cutoff" | "release_date" | None (no date, or not recorded)
    # {field: [Subgroup]}: score tasks' subgroups (sex, age band), each with intervals; {} when none
    subgroups: dict[str, list[Subgroup]] = {}
    # {field: [Breakdown]}: per-group accuracy (category, purpose, source); per-group intervals, not simultaneous
    breakdowns: dict[str, list[Breakdown]] = {}

    @property
    def primary(self) -> MetricValue:
        return self.metrics[0]


def encode_record(record: ResultRecord) -> bytes:
    return msgspec.json.encode(record)


def decode_record(data: bytes | str) -> ResultRecord:
    return msgspec.json.decode(data, type=ResultRecord)
