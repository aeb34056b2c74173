"""What an evaluation partition's materialization says, whichever kind of run made it.

Why one module: a partition is materialized by a run of that partition alone (the UI's
"Materialize", the CLI's runs) or by a ranged run that handles many partitions at once (a
backfill, ``ranged.py``); the UI must show the same metadata, data version and code version for
both, so both build them here. An evaluation's data version is its medbench run id; a pair that
cannot run here is materialized as skipped, with ``skipped_reason`` and the data version
``skipped:<run id>`` (never equal to a run id, so nothing takes it for a finished evaluation).
A third writer, ``medbench materialize`` (``skip_records.py``), records its skips without a run;
it builds the same records here too.
"""

from __future__ import annotations

import os

import dagster as dg

from pipelines.dagster.private_api import (
    CODE_VERSION_TAG,
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
    input_data_version_tag,
    input_event_pointer_tag,
)
from pipelines.dagster.engine_calls import Specs
from pipelines.tasks.base import CheckOutcome

SKIPPED_PREFIX = "skipped:"
# Set by `medbench demo` to the address it is about to serve on (``pipelines/cli/demo.py``), so
# the links of what it materializes point at its own port; MEDBENCH_PUBLIC_URL still wins.
SITE_URL_ENV = "MEDBENCH_SITE_URL"
DEFAULT_SITE_URL = "http://127.0.0.1:8000"


def public_url() -> str:
    """Where ``/r/<run_id>`` pages are: MEDBENCH_PUBLIC_URL, else the port ``medbench demo`` serves
    on (MEDBENCH_SITE_URL), else ``medbench serve``'s default address."""
    return (os.environ.get("MEDBENCH_PUBLIC_URL") or os.environ.get(SITE_URL_ENV) or DEFAULT_SITE_URL).rstrip("/")


def run_links(run_id: str) -> dict:
    """The medbench run id and its ``/r/<run_id>`` page, on every evaluation's metadata."""
    return {"run_id": run_id, "result_page": dg.MetadataValue.url(f"{public_url()}/r/{run_id}")}


def invalid_key_reason(partition_key: str, specs: Specs) -> str | None:
    """One line naming why ``partition_key`` is not a (task, model) pair of the specs, else None.

    Why: a key added by hand in the UI must fail at once with a reason (the sensor deletes it on
    its next tick), not deep inside the engine with a traceback."""
    task_ref, sep, model_slug = partition_key.partition("|")
    if not sep:
        why = "expected <task>@<version>|<model slug>"
    elif task_ref not in specs.tasks:
        why = f"unknown task version {task_ref!r}"
    elif model_slug not in specs.models:
        why = f"unknown model {model_slug!r}"
    elif task_ref not in specs.models[model_slug].tasks:
        why = f"{model_slug} does not list {task_ref} among its tasks"
    else:
        return None
    return f"{partition_key} names no valid (task, model) pair in the specs: {why}"


def skip_line(partition_key: str, model_slug: str, reason: str) -> str:
    return f"{partition_key}: skipped, {model_slug} cannot run here: {reason}"


def skipped_metadata(partition_key: str, model_slug: str, run_id: str, reason: str) -> dict:
    return {"skipped_reason": skip_line(partition_key, model_slug, reason), "evaluated": False, **run_links(run_id)}


def skipped_outcome(check_name: str, partition_key: str, model_slug: str, run_id: str, reason: str) -> CheckOutcome:
    """A check's verdict on a skipped pair: a warning that says it was skipped and why (never red,
    never left unexecuted: an unexecuted check shows "Skipped" with no reason in the UI)."""
    return CheckOutcome(check_name, False, f"not evaluated: {skip_line(partition_key, model_slug, reason)}",
                        {"run_id": run_id, "skipped": True}, "warn")


def record_tags(version: str, code_version: str, inputs: dict[str, str]) -> dict[str, str]:
    """The tags Dagster puts on a step's own materialization (data and code version, inputs), for
    the materializations recorded outside the asset's own step (a ranged run, the CLI's skips)."""
    return {DATA_VERSION_TAG: version, DATA_VERSION_IS_USER_PROVIDED_TAG: "true", CODE_VERSION_TAG: code_version,
            **inputs}


def input_tags(instance: dg.DagsterInstance, upstream: dg.AssetKey, partitioned: bool,
               partitions: list[str]) -> dict[str, dict[str, str]]:
    """partition -> the input data version and event pointer tags of ``upstream``'s newest
    materialization (the same partition when ``partitioned``, else the unpartitioned asset), so the
    UI's staleness reads a recorded materialization as it reads a step's own."""
    from pipelines.dagster.inputs_state import latest_versions

    if partitioned:
        pointers = latest_versions(instance, upstream, partitions, observations=False)
    else:
        records = instance.fetch_materializations(upstream, limit=1).records
        event = records[0] if records else None
        version = (event.asset_materialization.tags or {}).get(DATA_VERSION_TAG) if event else None
        pointers = {p: (event.storage_id, version) for p in partitions} if event else {}
    return {p: {input_data_version_tag(upstream): version, input_event_pointer_tag(upstream): str(sid)}
            for p, (sid, version) in pointers.items() if version}


def predictions_metadata(data, run_id: str, snapshot_id: str, reused: bool) -> dict:
    import pyarrow.parquet as pq

    path = data.predictions_path(run_id)
    return {**run_links(run_id), "rows": pq.read_metadata(path).num_rows, "reused": reused,
            "snapshot_id": snapshot_id, "path": path}


def metrics_metadata(data, record, reused: bool) -> dict:
    p = record.primary
    return {**run_links(record.run_id), "reused": reused, "n": record.n, "primary_metric": p.name,
            p.name: float(p.value), "ci_low": float(p.ci_low), "ci_high": float(p.ci_high),
            "parse_rate": record.parse_rate, "cost_usd": float(record.cost_usd),
            "path": data.result_path(record.run_id), "predictions": data.predictions_path(record.run_id)}
