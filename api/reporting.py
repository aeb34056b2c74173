"""How a published number was made, in words: interval methods, p-value floors, contamination.

The site, the About page and the OpenAPI document say how each interval was computed; reading it
from the task's spec (``[intervals]``, ``[bootstrap]``) and each metric's recorded ``method``, never
from text written per task, is what keeps them from contradicting the numbers (a page once said
"percentile bootstrap" for a task whose spec and metrics use Wilson).

Its file name is shared on purpose: the API's side of the computation of the same name (it reads
published rows; the numbers are computed in the pipeline).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from medbench.kinds import kinds
from warehouse.schema import BaselineComparisonRow

_METHODS = {
    "wilson": "Wilson score interval",
    "bootstrap-percentile": "percentile bootstrap",
    "cluster-bootstrap-percentile": "cluster percentile bootstrap",
    "cluster-bootstrap-expanded-percentile": "cluster expanded-percentile bootstrap (widened for few subjects)",
}


def method_text(method: str, spec: Mapping[str, Any]) -> str:
    """One metric's interval method in words, with the spec's bootstrap settings when it resamples."""
    words = _METHODS.get(method, method.replace("-", " "))
    bootstrap = spec.get("bootstrap") or {}
    if "bootstrap" in method and bootstrap:
        unit = bootstrap.get("unit") or "item"
        words += (f" over {unit}s, {bootstrap.get('replicates')} replicates, seed {bootstrap.get('seed')}")
    return words


def interval_lines(spec: Mapping[str, Any], methods: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(metric, how its 95% interval is made) for the task's metrics, in the spec's order.

    ``methods`` are (metric name, method) pairs of a published result of the task; a metric no
    result has published yet is described from the spec's ``[intervals]`` table alone."""
    recorded = {name: method for name, method in methods if method}
    table = spec.get("intervals") or {}
    out = []
    for name in spec.get("metrics") or list(recorded):
        if name in recorded:
            out.append((name, method_text(recorded[name], spec)))
        elif table:
            out.append((name, "as the spec's [intervals] say: "
                        + ", ".join(f"{k} = {v}" for k, v in sorted(table.items()))))
    return out


def reference_at_floor(b: BaselineComparisonRow) -> bool:
    """``p_at_floor`` of a comparison with the reference model, as recorded; in a file built before schema 5, whether p is the floor every
    bootstrap p-value then had, 2/(R+1) over the R kept replicates (an exact test has none)."""
    if b.p_at_floor is not None:
        return b.p_at_floor
    kept = b.replicates - b.dropped_replicates
    return "bootstrap" in b.method and kept > 0 and math.isclose(b.p_value, 2 / (kept + 1), rel_tol=1e-9)


def comparison_methods() -> str:
    """Every kind's paired test and interval, from the kinds themselves (the OpenAPI and MCP
    descriptions of ``/v1/compare``): a kind added later describes itself."""
    return " ".join(f"{name} tasks: {k.comparison_method}." for name, k in sorted(kinds().items()))
