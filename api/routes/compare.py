"""The answer of ``GET /v1/compare?a=RUN_ID&b=RUN_ID`` (declared in ``api.questions``): is result a better than result b on the same items?

The statistics are in ``api.compare``; this module checks the two ids (malformed: Litestar's
``invalid_parameter`` from the documented pattern; unknown: ``run_not_found``; missing, or results of different task versions: ``invalid_parameter``), reads
the two predictions files of the served version and memoises the answer with that version's
bodies, so a repeat costs a dictionary lookup and a new publish starts afresh. The bootstrap runs
in a worker thread: at full scale an AUROC comparison takes seconds and must not stall other
requests. The website's compare page calls ``comparison`` too, so both show the same numbers.

Its file name is shared on purpose: each route's module is named after its path (docs/api.md),
beside the module that holds what the route serves.
"""

from __future__ import annotations

import os
from functools import partial

import anyio.to_thread

from api import schemas
from api.answers import published
from api.compare import ComparisonError, compare_files
from api.errors import invalid_parameter, run_not_found
from api.params import require
from api.service import Service
from api.tables import Published, Tables, TaskEntry
from medbench.kinds.rubric import judges_agreement
from medbench.layout import DataDir

DEFAULT_REPLICATES = 2000  # for a task spec without bootstrap settings
DEFAULT_SEED = 0


def check_pair(tables: Tables, a: str | None, b: str | None) -> tuple[Published, Published, TaskEntry]:
    """The two results and their task, or the error a client should see."""
    a, b = require(a, "a"), require(b, "b")
    first, second = published(tables, a), published(tables, b)
    if first.record.task != second.record.task:
        raise invalid_parameter(
            f"{a} is a result of {first.record.task} and {b} of {second.record.task}: "
            "only results of the same task version can be compared"
        )
    task = tables.task_by_ref.get(first.record.task)
    if task is None:
        raise invalid_parameter(f"task {first.record.task} of these results is not in this warehouse")
    return first, second, task


def _compute(data: DataDir, first: Published, second: Published, task: TaskEntry) -> schemas.Compare:
    bootstrap = task.spec.get("bootstrap") or {}
    replicates = int(bootstrap.get("replicates", DEFAULT_REPLICATES))
    seed = int(bootstrap.get("seed", DEFAULT_SEED))
    paths = []
    for p in (first, second):
        path = data.predictions_path(p.run_id)
        if not os.path.exists(path):
            raise run_not_found(p.run_id, "its predictions file is missing from the data directory")
        paths.append(path)
    try:
        c = compare_files(task.kind, paths[0], paths[1], replicates, seed, task.cluster_column)
    except ComparisonError as exc:
        raise invalid_parameter(f"cannot compare {first.run_id} with {second.run_id}: {exc}") from None
    compared = first.record.metric(c.metric) or first.record.primary
    direction = compared.direction
    return schemas.Compare(
        a=first.run_id, b=second.run_id, task=task.ref, metric=c.metric, n_shared=c.n_shared,
        difference=c.difference, ci_low=c.ci_low, ci_high=c.ci_high, p_value=c.p_value, method=c.method,
        value_a=c.value_a, value_b=c.value_b, replicates=c.replicates, seed=c.seed,
        dropped_replicates=c.dropped_replicates, a_only_correct=c.a_only_correct, b_only_correct=c.b_only_correct,
        p_at_floor=c.p_at_floor, direction=direction, better=better(direction, c.ci_low, c.ci_high),
        judges=_judges(first, second, paths),
    )


def _judges(first: Published, second: Published, paths: list) -> schemas.JudgesCompared | None:
    """Two judges' agreement on the answers both results hold (docs/api.md, "Rubric tasks"): None
    unless both were graded by judges that differ, on at least one identical answer."""
    ja, jb = first.record.judge, second.record.judge
    if ja is None or jb is None or ja == jb:
        return None
    agreed = judges_agreement(paths[0], paths[1])
    if agreed is None:
        return None
    return schemas.JudgesCompared(
        judge_a=ja.model, judge_b=jb.model, n_items=agreed.n_items, n_grades=agreed.n_grades,
        agreement=agreed.agreement, kappa=agreed.kappa,
        criteria=[schemas.CriterionAgreement(criterion=c.criterion, n=c.n, agreement=c.agreement, kappa=c.kappa)
                  for c in agreed.criteria])


def better(direction: str, ci_low: float, ci_high: float) -> str | None:
    """The result the whole 95% interval of (a - b) favours in the metric's direction, else None:
    above 0 favours a when higher is better and b when lower is; a target metric names none."""
    if direction == "target" or not ci_low <= ci_high or (ci_low <= 0 <= ci_high):
        return None
    above = ci_low > 0
    return ("a" if above else "b") if direction == "higher" else ("b" if above else "a")


async def comparison(service: Service, tables: Tables, a: str | None, b: str | None) -> schemas.Compare:
    """The comparison of a with b in ``tables``' version, computed once per (version, a, b)."""
    first, second, task = check_pair(tables, a, b)
    key = ("compare", first.run_id, second.run_id)
    cached = tables.bodies.get(key)
    if cached is None:
        computed = await anyio.to_thread.run_sync(partial(_compute, service.settings.data, first, second, task))
        cached = tables.bodies.put(key, computed)
    return cached
