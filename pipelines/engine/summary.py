"""The common shape of a scored run, whatever the task family: what a family's ``score`` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec


@dataclass
class ScoreSummary:
    metrics: list[tuple]  # (name, value, ci_low, ci_high[, method[, direction[, target]]]), primary first
    n: int
    parse_rate: float | None
    extras: msgspec.Struct | None = None  # the family's typed extras (published as the result's `extras`)
    subgroups: dict[str, list] = field(default_factory=dict)  # {field: [warehouse.records.Subgroup]}
    breakdowns: dict[str, list] = field(default_factory=dict)  # {field: [warehouse.records.Breakdown]}

    def extras_json(self) -> dict[str, Any]:
        """The extras as the result record stores them (plain JSON values, in field order)."""
        return msgspec.to_builtins(self.extras) if self.extras is not None else {}
