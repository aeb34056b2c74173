"""The validity gate: a metric that is undefined or degenerate is never published as a number
(docs/statistics.md, "Withheld metrics").

Other leaderboards have published AUROC = NaN, and accuracy 1.0 with a standard error of 0.0; a
number like that reads as a measurement and is none. A metric row is withheld, with its reason, when:

- its value is not finite: undefined on these test items (one class only, a PPV with no alarm);
- its interval is not finite: no bootstrap replicate defines it;
- a bootstrap interval has zero width (low == high): every resample gave the same value, so the
  interval says nothing about uncertainty (degenerate resamples: e.g. no alarm in any replicate);
- a bootstrap metric is defined in fewer than half of the replicates (``replicates_kept``): the
  interval is conditional on resamples unlike the data.

The rows are the ``MetricValue`` tuples a family's ``score`` returns,
``(name, value, ci_low, ci_high[, method[, direction[, target[, replicates_kept]]]])``.
"""

from __future__ import annotations

import math

MIN_KEPT_SHARE = 0.5


def reason(row: tuple, replicates: int | None) -> str | None:
    """Why the metric row must be withheld, or None when it may be published."""
    name, value, low, high = row[0], row[1], row[2], row[3]
    method = row[4] if len(row) > 4 and row[4] else ""
    kept = row[7] if len(row) > 7 else None
    if not math.isfinite(value):
        return f"{name} is undefined on these test items (no value: e.g. one class only, or no alarm)"
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{name} has no interval: no bootstrap replicate defines it"
    if "bootstrap" in method and low == high:
        return (f"{name}'s bootstrap interval collapses to the single value {value:g}: every resample gave the "
                "same value (degenerate resamples), so it says nothing about uncertainty")
    if "bootstrap" in method and kept is not None and replicates and kept < MIN_KEPT_SHARE * replicates:
        return f"{name} is defined in only {kept} of {replicates} bootstrap replicates (fewer than half)"
    return None


def gate(rows: list[tuple], replicates: int | None) -> tuple[list[tuple], list[tuple[str, str]]]:
    """(the rows that may be published, [(name, reason)] of those withheld), order kept.

    The first row is the task's primary metric: a result without it cannot be ranked or compared,
    so a withheld primary is an error (one line saying why), never a result with a missing number."""
    kept, withheld = [], []
    for i, row in enumerate(rows):
        why = reason(row, replicates)
        if why is None:
            kept.append(row)
        elif i == 0:
            raise ValueError(f"the primary metric is not publishable: {why}; no result is written")
        else:
            withheld.append((row[0], why))
    return kept, withheld
