"""The one module of medbench that imports Dagster's private (underscore) modules.

Why it exists: Dagster 1.13's public API (``import dagster as dg``) lacks a few things medbench
needs, and private modules change between releases without notice. Everything private is here,
behind small functions, so an upgrade breaks one file, and ``tests/unit/pipelines/test_private_api.py``
fails first when Dagster's behaviour under any of them changes. ``grep -rn "dagster\\._" pipelines``
finds nothing elsewhere. What is used, and why no public name does it (docs/dagster-ui.md lists them too):

- **Tag names** Dagster writes on runs and materializations (data version, code version, input
  pointers, partition, partition range, backfill id): a materialization recorded outside its
  asset's own step (a ranged run, the CLI's skips) must carry the same tags for the UI's
  staleness and partition status to read it; Dagster exports only ``MAX_RUNTIME_SECONDS_TAG``.
- **Instance overrides** (``InstanceRef.from_dir(overrides=)``): the CLI's instance turns
  compute-log capture off (``cli_instance.py``); ``DagsterInstance.from_config`` takes no overrides.
- **A check verdict's target materialization** (``AssetCheckEvaluationTargetMaterializationData``):
  ``dg.AssetCheckEvaluation`` takes one, but its type is not exported.
- **Batched runless observations**: ``instance.report_runless_asset_event`` writes one event per
  call; rule one over 1,000 reused partitions would be 1,000 storage writes.
- **Queueing a run of a named job from inside a run** (``RemoteJobOrigin``), and whether the
  daemon that dequeues it is alive (``get_daemon_statuses``): a backfill's ranged run and
  ``evaluate_all`` submit their partitions' runs to the instance, as the UI's launch does; the
  public way to submit (a sensor's ``RunRequest``) needs the daemon anyway and a tick per request.
- **Celery retries** (``RetryMode``): dagster-celery's executor takes one; built from config here.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import dagster as dg
from dagster._check import CheckError
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.definitions.data_version import (
    CODE_VERSION_TAG,
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
    get_input_data_version_tag,
    get_input_event_pointer_tag,
)
from dagster._core.events import AssetObservationData
from dagster._core.execution.retries import RetryMode
from dagster._core.instance.ref import InstanceRef
from dagster._core.instance.utils import RUNLESS_JOB_NAME, RUNLESS_RUN_ID
from dagster._core.remote_origin import RemoteJobOrigin
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    BACKFILL_ID_TAG,
    PARTITION_NAME_TAG,
)
from dagster._daemon.controller import get_daemon_statuses

__all__ = [
    "ASSET_PARTITION_RANGE_END_TAG", "ASSET_PARTITION_RANGE_START_TAG", "BACKFILL_ID_TAG", "CODE_VERSION_TAG",
    "DATA_VERSION_IS_USER_PROVIDED_TAG", "DATA_VERSION_TAG", "NO_CAPTURE", "PARTITION_NAME_TAG", "check_target",
    "input_data_version_tag", "input_event_pointer_tag", "instance_from_dir", "queue_run", "queued_runs_start",
    "repository_job", "retry_mode", "store_observations",
]

# Compute logs captured by nothing: the events stay in the event log, prints go to the terminal.
NO_CAPTURE = {"compute_logs": {"module": "dagster._core.storage.noop_compute_log_manager",
                               "class": "NoOpComputeLogManager"}}


def input_data_version_tag(upstream: dg.AssetKey) -> str:
    """The tag holding the data version of ``upstream`` a materialization was made from."""
    return get_input_data_version_tag(upstream)


def input_event_pointer_tag(upstream: dg.AssetKey) -> str:
    """The tag holding the storage id of the ``upstream`` event a materialization was made from."""
    return get_input_event_pointer_tag(upstream)


def instance_from_dir(home: Path | str, overrides: dict) -> dg.DagsterInstance:
    """The instance of ``home/dagster.yaml`` with ``overrides`` on top (e.g. ``NO_CAPTURE``)."""
    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), overrides=overrides))


def check_target(storage_id: int, run_id: str, timestamp: float) -> AssetCheckEvaluationTargetMaterializationData:
    """What ``dg.AssetCheckEvaluation(target_materialization_data=...)`` points at: one materialization."""
    return AssetCheckEvaluationTargetMaterializationData(storage_id=storage_id, run_id=run_id, timestamp=timestamp)


def store_observations(instance: dg.DagsterInstance, observations: list[dg.AssetObservation]) -> None:
    """Runless observations stored as one batch: what ``report_runless_asset_event`` stores, one write."""
    if not observations:
        return
    now = time.time()
    entries = [dg.EventLogEntry(
        user_message="", level=logging.INFO, job_name=RUNLESS_JOB_NAME, run_id=RUNLESS_RUN_ID, error_info=None,
        timestamp=now, dagster_event=dg.DagsterEvent(
            event_type_value=dg.DagsterEventType.ASSET_OBSERVATION.value, job_name=RUNLESS_JOB_NAME,
            event_specific_data=AssetObservationData(obs))) for obs in observations]
    instance.event_log_storage.store_event_batch(entries)


def repository_job(context: dg.OpExecutionContext, name: str) -> dg.JobDefinition | None:
    """Job ``name`` of the code location this run was loaded from, or None: a run of ``dg.materialize``
    or of a bare job has no repository, and Dagster raises its invariant error on asking for it."""
    try:
        repo = context.repository_def
    except CheckError:
        return None
    return repo.get_job(name) if repo.has_job(name) else None


def queued_runs_start(instance: dg.DagsterInstance) -> bool:
    """True when a queued run would be started: the instance queues runs and its daemon is alive."""
    if not isinstance(instance.run_coordinator, dg.QueuedRunCoordinator):
        return False
    status = get_daemon_statuses(instance, ["QUEUED_RUN_COORDINATOR"], ignore_errors=True)
    return bool(status["QUEUED_RUN_COORDINATOR"].healthy)


def can_queue_from(run: dg.DagsterRun) -> bool:
    """Whether ``run`` was launched from a code location, so a run of another of its jobs can be queued."""
    return run.remote_job_origin is not None and run.job_code_origin is not None


def queue_run(instance: dg.DagsterInstance, parent: dg.DagsterRun, job: dg.JobDefinition, run_config: dict,
              tags: dict[str, str]) -> dg.DagsterRun:
    """A run of ``job`` (of ``parent``'s code location) submitted to the instance's run coordinator,
    as the UI's "Launch run" submits one: queued, the daemon starts it within the run limits."""
    origin = RemoteJobOrigin(repository_origin=parent.remote_job_origin.repository_origin, job_name=job.name)
    code_origin = parent.job_code_origin._replace(job_name=job.name)
    run = instance.create_run_for_job(job_def=job, run_config=run_config, tags=tags,
                                      status=dg.DagsterRunStatus.NOT_STARTED, remote_job_origin=origin,
                                      job_code_origin=code_origin)
    return instance.submit_run(run.run_id, workspace=None)


def retry_mode(config: dict) -> RetryMode:
    """dagster-celery's retry setting from its executor config (``{"enabled": {}}``, ...)."""
    return RetryMode.from_config(config)
