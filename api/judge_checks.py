"""A leaderboard's note where the judge that graded a row failed its scorecard: its Cohen's kappa with
the reference grades (the result's ``judge_kappa``) below the task spec's ``min_judge_kappa``
(docs/api.md, "Rubric tasks"; docs/adding-a-task.md, "The rubric kind").

The scorecard is computed per result, on the answers of that result a physician graded, so the note
is per row: the run, the judge, its kappa and the threshold. ``/v1/leaderboard`` and the task page
both read it from here, so they cannot disagree. A result without ``judge_kappa`` (no reference
grades cover its answers) carries no note: there is nothing to hold the judge to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from api import schemas
from api.tables import Published

KAPPA_METRIC = "judge_kappa"


def min_judge_kappa(spec: Mapping[str, Any]) -> float | None:
    """The threshold of the spec's settings table that names the judge, None where there is none."""
    for value in spec.values():
        if isinstance(value, Mapping) and isinstance(value.get("min_judge_kappa"), (int, float)):
            return float(value["min_judge_kappa"])
    return None


def judge_warnings(spec: Mapping[str, Any], rows: Iterable[Published]) -> list[schemas.JudgeWarning]:
    """One note per row whose judge's kappa is below the spec's threshold, in the rows' order."""
    threshold = min_judge_kappa(spec)
    if threshold is None:
        return []
    out = []
    for p in rows:
        kappa = p.record.metric(KAPPA_METRIC)
        judge = p.record.judge
        if judge is None or kappa is None or not kappa.value < threshold:
            continue
        out.append(schemas.JudgeWarning(
            run_id=p.run_id, model=p.record.model.slug, judge=judge.model, kappa=kappa.value, min_kappa=threshold,
            message=(f"the judge {judge.model} failed its scorecard on {p.record.model.slug}'s answers: Cohen's "
                     f"kappa with the reference grades {kappa.value:.3f} is below this task's min_judge_kappa "
                     f"{threshold:g}; read this score with care")))
    return out
