"""The bodies that carry a published number with its uncertainty: a metric and its interval, a
subgroup's and a breakdown group's metrics, a metric withheld as undefined or degenerate, and a
task's smallest detectable difference (docs/statistics.md). Re-exported by ``api.schemas``."""

from __future__ import annotations

from typing import Literal

import msgspec

from medbench.records import Estimate, JudgeRef, UsagePart, Withheld  # noqa: F401  (the records' own Structs: same fields, same JSON)


class Metric(Estimate):
    # the estimate's fields first (name, value, ci_low, ci_high); no docstring: it would become the
    # JSON Schema's description, and MCP's tools/list is pinned
    method: str  # wilson | bootstrap-percentile | cluster-bootstrap-percentile | cluster-bootstrap-expanded-percentile
    direction: Literal["higher", "lower", "target"] = "higher"  # which way is better, for ranking
    target: float | None = None  # the best value when direction is "target" (e.g. calibration slope 1)
    # bootstrap replicates behind the interval; 0: an analytic interval (Wilson), no replicates
    replicates_kept: int = 0
    # rubric tasks' primary metric: the interval without judge resampling (items alone); [ci_low, ci_high]
    # is then the two-stage interval over items and judge samples. None for every other metric
    ci_low_items_only: float | None = None
    ci_high_items_only: float | None = None


class Subgroup(msgspec.Struct):
    """A result's metrics on one subgroup of its test items (e.g. sex F), with their own intervals."""

    group: str
    n: int
    n_subjects: int
    metrics: list[Metric]
    caveat: str | None = None  # e.g. fewer than 30 subjects: wide, unstable intervals
    replicates_kept: int = 0  # replicates every interval of the subgroup was computed from (0: counts only)
    withheld_reason: str | None = None  # metrics is [] because the subgroup has too few subjects


class Breakdown(msgspec.Struct):
    """The primary metric on one group of items; a per-group 95% interval, not a simultaneous one."""

    group: str
    n: int
    metric: Metric


class DetectableDifference(msgspec.Struct):
    """The smallest difference in ``metric`` a paired comparison at the task's n detects (docs/statistics.md)."""

    metric: str
    value: float
    power: float  # 0.8
    alpha: float  # 0.05, two-sided
    basis: str  # how it was computed, in words (the discordant rate or the SD it came from)


class Judge(JudgeRef):
    """The judge model that graded a rubric result: slug, revision, its prompt's sha256, samples per answer."""
    # the record's fields (model, revision, prompt_sha256, samples); this docstring is the body's description
