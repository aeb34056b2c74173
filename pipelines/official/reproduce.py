"""Reproduce an official result: rerun its kept package in the sandbox it ran under, compare.

The package is rerun on the public instances of the local data directory, the same set it first
answered (test instances, then validation inputs where the family gives them: ``evaluate.public_inputs``;
the data directory must hold the snapshot the result records, the kept wheel and its kept dependency wheels, each checked against
its recorded sha256: exactly those are installed, never the index's latest), under the recorded
sandbox policy (a result made under another policy version is not rerun: ``PolicyChanged``); its answers
are compared byte for byte with the ones kept beside the result, and the predictions it makes
(through the task's own parser or table) by sha256 with the published file. The kept wheel passes
the door's checks again first (``check_wheel``), and its recorded file name only ever reaches the
sandbox as an argv item (docs/official-tier.md, "Threat model").

Its file name is shared on purpose: the official tier's counterpart of the engine's or CLI's module
of the same name (docs/official-tier.md).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.engine.snapshots import current_snapshot
from pipelines.engine.specs import Specs
from pipelines.official.evaluate import ANSWERS_FILE, answer, kept_dependencies_dir, plan_official, predictions_from
from pipelines.official.package import check_wheel
from pipelines.official.policy import from_env
from pipelines.official.wheels import verify
from medbench.layout import DataDir

Log = Callable[[str], None]


def parquet_sha256(table: pa.Table) -> str:
    """The sha256 of the table as the engine writes predictions (zstd Parquet)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def reproduce_official(specs: Specs, data: DataDir, result: dict[str, Any], log: Log) -> list[str]:
    """The differences found (empty: identical); a reason it cannot run here is one difference.
    PolicyChanged (before anything runs) when the result was made under another policy version."""
    provenance = result["provenance"]
    policy = from_env().recorded(provenance["sandbox"])
    sha = provenance["package_sha256"]
    official = result["config"].get("official") or {}
    name = official.get("package_file", "")
    run = result["run_id"]
    snapshot = current_snapshot(data, specs.task(result["task"]).dataset).snapshot_id
    if snapshot != result["versions"]["dataset_snapshot"]:
        return [f"dataset snapshot: the result records {result['versions']['dataset_snapshot']}, {data.root} holds {snapshot}"]
    wheel = data.package_path(sha, name)
    kept_answers = data.run_dir(run) / ANSWERS_FILE
    if not wheel.exists() or not kept_answers.exists():
        return [f"the kept package or its answers are not in {data.root} (expected {wheel} and {kept_answers})"]
    set_sha = official.get("dependencies_sha256", "")
    ev = plan_official(specs, data, result["task"], result["model"]["slug"], sha, set_sha)
    if ev.run_id != run:
        return [f"run id: this checkout makes {ev.run_id} from the same specs, snapshot, package and dependencies"]
    check_wheel(wheel, sha)  # the door again: a kept file or a recorded name is never trusted blindly
    dependencies = verify(kept_dependencies_dir(data, sha, name, set_sha), official.get("dependencies", []))
    if dependencies.set_sha256 != set_sha:
        return [f"dependencies: the recorded set hashes to {dependencies.set_sha256}, the result records {set_sha}"]
    log(f"rerunning package {sha[:12]} for {ev.partition_key} in the sandbox ({policy.version})")
    recorded_weights = official.get("weights")
    answers = answer(ev, data, wheel, policy, dependencies, Path(recorded_weights) if recorded_weights else None)
    differences = []
    if answers.answers_jsonl != kept_answers.read_bytes():
        differences.append("package answers: the rerun's differ from the kept ones (not byte for byte identical)")
    again = parquet_sha256(predictions_from(ev, data, answers, log)[0])
    if again != result["predictions_sha256"]:
        differences.append(f"predictions sha256: published {result['predictions_sha256']}, reproduced {again}")
    return differences
