"""The common shape of a scored run, whatever the task kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ScoreSummary:
    metrics: list[tuple[str, float, float, float]]  # (name, value, ci_low, ci_high), primary first
    n: int
    parse_rate: float | None
    extras: dict[str, Any] = field(default_factory=dict)
