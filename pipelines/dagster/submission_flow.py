"""Approved submissions -> model spec files -> evaluation runs -> the submission's state, as one
plain set of functions called by the ``submissions`` sensor (runs launched through the instance by
its run requests) and by ``medbench submissions run`` (runs executed in-process, no daemon).

- ``prepare``: write the approved submission's spec into the submissions-specs folder and validate it
  again (``pipelines.engine.submitted_specs``), then rule one over its (task, model) pairs
  (``plan.plan_selection``): every result already there -> ``evaluated`` at once; a pair that cannot
  run here (e.g. a Hub model without its extra) -> ``failed`` with the reason; else the partitions to run.
- ``settle``: the outcomes of its partitions (``report.Outcome``: ran, reused, skipped, failed) ->
  ``evaluated`` with the results' run ids, or ``failed`` with the first failure's one-line root cause
  (the line ``medbench materialize`` prints).
- ``observe``: the sensor's view of a submission's Dagster runs (tag ``medbench/submission``) turned
  into the same outcomes; a run that failed without a failed step (its process was killed, run
  monitoring or the dead-runs sensor reported it) is "run <id> died".
- ``run_official``: an approved *official* submission (tier ``official``, its wheel kept) never takes
  the baseline path above: its package runs in the sandbox (``pipelines.official.submission``), which
  moves the submission itself. Called by the ``run_official_submission`` job the sensor requests, and
  by ``medbench submissions run``. Whoever moves it ``queued -> running`` first runs it; the store
  refuses the second move (``IllegalTransition``), so nothing runs twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import dagster as dg

from pipelines.orchestration.plan import Planned, plan_selection
from pipelines.orchestration.report import Outcome, root_cause
from pipelines.dagster.engine_calls import Specs
from medbench.layout import DataDir
from medbench.submissions import IllegalTransition, Submission, SubmissionStore

SUBMISSION_TAG = "medbench/submission"
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
Log = Callable[[str], None]


@dataclass
class Prepared:
    submission: Submission
    to_run: list[Planned] = field(default_factory=list)
    specs: Specs | None = None


def _move(store: SubmissionStore, sub_id: str, state: str, reason: str, run_ids=(), log: Log = print) -> None:
    """A transition another process may have made first (a second sensor tick, the CLI): then nothing."""
    try:
        store.transition(sub_id, state, reason, run_ids=list(run_ids))
        log(f"submission {sub_id}: {state} ({reason})")
    except IllegalTransition:
        pass


def is_official(sub: Submission) -> bool:
    """Official submissions run their package in the sandbox; every other one takes the baseline path."""
    return sub.tier == "official"


def run_official(store: SubmissionStore, sub_id: str, data: DataDir, load_specs: Callable[[], Specs],
                 log: Log = print) -> Submission | None:
    """Run an approved official submission's package; its final state, or None when another process
    (a sensor's run, a concurrent ``submissions run``) had already taken it. Anything that stops it
    before it ends fails it with the one-line reason, so no submission is left ``running`` by an error."""
    from pipelines.official.submission import run_submission

    if store.get(sub_id).state != "queued":
        log(f"submission {sub_id}: already taken by another run")
        return None
    try:
        return run_submission(load_specs(), data, store, sub_id, log)
    except IllegalTransition:  # the other process moved it between our read and our move
        log(f"submission {sub_id}: already taken by another run")
        return None
    except Exception as exc:  # noqa: BLE001 - the boundary where a submission must end in a state
        lines = str(exc).strip().splitlines()
        _move(store, sub_id, "failed", lines[0] if lines else type(exc).__name__, log=log)
        return store.get(sub_id)


def mark_running(tags: dict[str, str], run_id: str, data: DataDir, log: Log = print) -> None:
    """Called by a submission's evaluation run as it starts: ``queued -> running`` then, not at the
    sensor's next tick (a short run was stamped running and evaluated at once, docs/submitting.md)."""
    import os

    from medbench.submissions import URL_ENV, SubmissionNotFound

    sub_id = tags.get(SUBMISSION_TAG)
    if not sub_id or (not os.environ.get(URL_ENV) and not data.submissions_db.exists()):
        return
    store = SubmissionStore.for_data(data)
    try:
        if store.get(sub_id).state == "queued":
            _move(store, sub_id, "running", f"dagster run(s) {run_id}", log=log)
    except SubmissionNotFound:
        return
    finally:
        store.close()


def published(data: DataDir, sub: Submission, outcomes: list[Outcome]) -> bool:
    """Every result of the submission is in the published warehouse (its run link answers): only then
    is it ``evaluated``; the publish sensor follows the runs by a few seconds."""
    from warehouse.read import READ_ERRORS, NoWarehouse, current_result

    try:
        for o in outcomes:
            task, _, _ = o.partition.partition("|")
            found = current_result(data, sub.model["slug"], task)
            if found is None or found.record.run_id != o.run_id:
                return False
    except (NoWarehouse, *READ_ERRORS):
        return False
    return True


def settle(store: SubmissionStore, sub: Submission, outcomes: list[Outcome], log: Log = print) -> None:
    """Every partition ran or was reused: ``evaluated``; else ``failed`` with the first problem."""
    bad = [o for o in outcomes if o.status not in ("ran", "reused")]
    if not outcomes:
        _move(store, sub.id, "failed", "no evaluation was run", log=log)
    elif bad:
        first = bad[0]
        what = "not runnable here" if first.status == "skipped" and not first.detail else first.detail
        _move(store, sub.id, "failed", f"{first.partition}: {what or first.status}", log=log)
    else:
        _move(store, sub.id, "evaluated", f"{len(outcomes)} result(s) in the baseline tier",
              run_ids=[o.run_id for o in outcomes if o.run_id], log=log)


def prepare(store: SubmissionStore, sub: Submission, data: DataDir, load_specs: Callable[[], Specs],
            log: Log = print) -> Prepared | None:
    """The partitions to run for an approved submission, or None when it was settled here (spec
    invalid, every result already there, or not runnable here)."""
    from medbench.specs import SpecError
    from pipelines.dagster.engine_calls import write_submitted_spec

    try:
        specs = load_specs()
        write_submitted_spec(sub, data, specs.plugins)
        specs = load_specs()  # with the new file
        model = specs.models[sub.model["slug"]]
        pairs = [(specs.task(ref), model) for ref in sub.tasks]
    except (SpecError, KeyError) as exc:
        _move(store, sub.id, "failed", f"its spec is invalid: {exc}", log=log)
        return None
    planned = plan_selection(specs, data, pairs, force=False)
    if all(p.status != "run" for p in planned):
        settle(store, sub, [Outcome(p.partition, "reused" if p.status == "reuse" else "skipped", p.run_id, p.reason)
                            for p in planned], log)
        return None
    return Prepared(sub, [p for p in planned if p.status == "run"], specs)


# -- the sensor's view: Dagster runs tagged with the submission --------------------------------------


def runs_of(instance: dg.DagsterInstance, sub_id: str) -> list[dg.DagsterRun]:
    return list(instance.get_runs(filters=dg.RunsFilter(tags={SUBMISSION_TAG: sub_id})))


def failure_line(instance: dg.DagsterInstance, run: dg.DagsterRun) -> str:
    """The run's failed steps' root causes (``step: cause``, as ``medbench materialize`` prints them),
    or "run <id> died" when no step failed (the process was killed; monitoring reported the run)."""
    if run.status == dg.DagsterRunStatus.CANCELED:
        return f"run {run.run_id} was canceled"
    causes: list[str] = []
    for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        event = entry.dagster_event
        data = event.step_failure_data if event is not None else None
        if data is not None and data.error is not None:
            cause = f"{event.step_key}: {root_cause(data.error)}"
            if cause not in causes:
                causes.append(cause)
    return "; ".join(causes) or f"run {run.run_id} died"


def observe(instance: dg.DagsterInstance, store: SubmissionStore, sub: Submission, data: DataDir,
            load_specs: Callable[[], Specs], log: Log = print) -> None:
    """Move a launched submission as Dagster reports its runs: any failed run fails it; all finished
    fine: settled from the results there (rule one again); runs under way: ``running``."""
    runs = runs_of(instance, sub.id)
    if not runs:
        return
    failed = [r for r in runs if r.status in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)]
    if failed:
        run = failed[0]
        partition = run.tags.get("dagster/partition", "")
        _move(store, sub.id, "failed", f"{partition}: {failure_line(instance, run)}" if partition
              else failure_line(instance, run), log=log)
        return
    if is_official(sub):  # its run moves it itself (run_official); only a run that died is ours to report
        return
    if any(r.status not in FINISHED for r in runs):
        if sub.state == "queued" and any(r.status == dg.DagsterRunStatus.STARTED for r in runs):
            _move(store, sub.id, "running", "dagster run(s) " + ", ".join(r.run_id for r in runs), log=log)
        return
    specs = load_specs()
    model = specs.models.get(sub.model["slug"])
    if model is None:
        _move(store, sub.id, "failed", "its spec file is gone from the submissions-specs folder", log=log)
        return
    planned = plan_selection(specs, data, [(specs.task(ref), model) for ref in sub.tasks], force=False)
    outcomes = [Outcome(p.partition, {"reuse": "ran", "skip": "skipped"}.get(p.status, "failed"), p.run_id,
                        p.reason if p.status == "skip" else
                        "" if p.status == "reuse" else "its run finished without a result") for p in planned]
    if sub.state == "queued":
        _move(store, sub.id, "running", "dagster run(s) " + ", ".join(r.run_id for r in runs), log=log)
    if all(o.status == "ran" for o in outcomes) and not published(data, sub, outcomes):
        return  # evaluated once published (the publish sensor's run), at a later tick
    settle(store, store.get(sub.id), outcomes, log)


def open_submissions(store: SubmissionStore) -> list[Submission]:
    """Approved (queued) and running submissions, oldest change first."""
    return store.in_state("queued") + store.in_state("running")
