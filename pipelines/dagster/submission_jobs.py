"""Submissions in the Dagster UI: the ``review_submission`` job (a maintainer approves or rejects,
with a reason, from the Launchpad), the ``submissions`` sensor (approved submissions -> spec files ->
evaluation runs launched through the instance, within the pools; their states follow the runs) and
the ``run_official_submission`` job (an approved official submission's package in the sandbox, which
the sensor requests for it, in the pool the submission asked for), the ``submission_run_failures``
run-failure sensor (a run that fails or dies fails its submission at once, "run <id> died" when its
process was killed). The work itself is ``submission_flow``'s plain
functions, which ``medbench submissions run`` calls in-process when no daemon runs.
"""

# No `from __future__ import annotations`: Dagster reads the op's config type from its real annotation.

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import dagster as dg

from pipelines.dagster.limits import POOL_TAG
from pipelines.dagster.partitions import evaluation_job_name, partitions_name
from pipelines.orchestration.plugins import specs as load_specs
from pipelines.dagster.submission_flow import (
    SUBMISSION_TAG,
    is_official,
    observe,
    open_submissions,
    prepare,
    run_official,
    runs_of,
)
from medbench.layout import DataDir
from medbench.submissions import URL_ENV, Submission, SubmissionNotFound, SubmissionStore


@contextmanager
def _store(data: DataDir) -> Iterator[SubmissionStore | None]:
    """The submissions store, or None when this data directory has none (nothing was ever submitted)."""
    if not os.environ.get(URL_ENV) and not data.submissions_db.exists():
        yield None
        return
    store = SubmissionStore.for_data(data)
    try:
        yield store
    finally:
        store.close()


class ReviewConfig(dg.Config):
    submission_id: str
    decision: str  # approve | reject
    reason: str


@dg.op(description="Approve (-> queued) or reject a submission awaiting approval, with the reason its owner reads.")
def review_submission_op(context: dg.OpExecutionContext, config: ReviewConfig) -> None:
    from pipelines.dagster.engine_calls import review

    with _store(DataDir()) as store:
        if store is None:
            raise dg.Failure(f"no submissions store in {DataDir().root}: nothing was submitted here")
        sub = review(store, config.submission_id, config.decision, config.reason)
    context.log.info(f"submission {sub.id}: {sub.state} ({sub.state_reason})")


@dg.job(name="review_submission",
        description="A maintainer's decision on a submission: config {submission_id, decision: approve|reject, "
                    "reason}. Approved submissions are evaluated by the `submissions` sensor.")
def review_submission() -> None:
    review_submission_op()


class OfficialSubmissionConfig(dg.Config):
    submission_id: str


@dg.op(description="Run an approved official submission's kept package in the sandbox and score its outputs; "
                   "the submission moves to running, then evaluated or failed with the package's one-line reason.")
def run_official_submission_op(context: dg.OpExecutionContext, config: OfficialSubmissionConfig) -> None:
    data = DataDir()
    with _store(data) as store:
        if store is None:
            raise dg.Failure(f"no submissions store in {data.root}: nothing was submitted here")
        final = run_official(store, config.submission_id, data, load_specs, log=context.log.info)
    if final is not None:
        context.log.info(f"submission {final.id}: {final.state} ({final.state_reason})")


@dg.job(name="run_official_submission", tags={"medbench/kind": "official-submission"},
        description="An approved official submission (config {submission_id}): its package runs in the sandbox. "
                    "The `submissions` sensor requests it; a submission another run already took is left alone.")
def run_official_submission() -> None:
    run_official_submission_op()


def official_run_request(sub: Submission) -> dg.RunRequest:
    """One run per official submission: the run key keeps a later tick from requesting it again; the
    pool tag (the sandbox's pool, ``cpu`` unless it asked for another) puts it under the pool limits."""
    return dg.RunRequest(run_key=f"{sub.id}:official", job_name="run_official_submission",
                         run_config={"ops": {"run_official_submission_op": {"config": {"submission_id": sub.id}}}},
                         tags={SUBMISSION_TAG: sub.id, POOL_TAG: sub.resources.pool if sub.resources else "cpu"})


def submissions_sensor(evaluation_jobs: Sequence) -> dg.SensorDefinition:
    """The sensor over ``evaluation_jobs`` (the families' named jobs, which its run requests name)."""

    @dg.sensor(name="submissions", jobs=[*evaluation_jobs, run_official_submission], minimum_interval_seconds=30,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Turns approved submissions into model spec files (submitted-specs/ in the data "
                           "directory, validated again), adds their partitions and requests their evaluation runs; "
                           "moves each submission to running, evaluated or failed as its runs report. An approved "
                           "official submission gets one run_official_submission run instead.")
    def submissions(context: dg.SensorEvaluationContext):
        data = DataDir()
        runs: list[dg.RunRequest] = []
        partitions: dict[str, list[str]] = {}
        with _store(data) as store:
            if store is None:
                return dg.SkipReason("no submissions store in this data directory")
            for sub in open_submissions(store):
                if runs_of(context.instance, sub.id) or sub.state == "running":
                    observe(context.instance, store, sub, data, load_specs, log=context.log.info)
                    continue
                if is_official(sub):
                    if sub.state == "queued":
                        runs.append(official_run_request(sub))
                    continue
                prepared = prepare(store, sub, data, load_specs, log=context.log.info)
                for p in prepared.to_run if prepared else []:
                    name = partitions_name(p.task.family)
                    if not context.instance.has_dynamic_partition(name, p.partition):
                        partitions.setdefault(name, []).append(p.partition)
                    runs.append(dg.RunRequest(run_key=f"{sub.id}:{p.partition}", partition_key=p.partition,
                                              job_name=evaluation_job_name(p.task.family),
                                              tags={SUBMISSION_TAG: sub.id}))
        if not runs and not partitions:
            return dg.SkipReason("no approved submission waits for a run")
        return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=[
            dg.AddDynamicPartitionsRequest(name, keys) for name, keys in partitions.items()])

    return submissions


@dg.run_failure_sensor(name="submission_run_failures", default_status=dg.DefaultSensorStatus.RUNNING,
                       description="A failed or killed evaluation run of a submission fails the submission "
                                   "with the run's root cause (\"run <id> died\" when no step failed).")
def submission_run_failures(context: dg.RunFailureSensorContext) -> None:
    sub_id = context.dagster_run.tags.get(SUBMISSION_TAG)
    if not sub_id:
        return
    data = DataDir()
    with _store(data) as store:
        if store is None:
            return
        try:
            sub = store.get(sub_id)
        except SubmissionNotFound:
            return
        if sub.open:
            observe(context.instance, store, sub, data, load_specs, log=context.log.info)
