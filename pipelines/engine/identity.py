"""Run identity and the versions every result records.

A run id is a pure function of what decides a result (model, its revision and spec, the task
version and its spec, the dataset snapshot), so re-materializing can never make a second result
for the same inputs, and a demo result (different snapshot) never shares an id with a real one.
"""

from __future__ import annotations

import hashlib
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from pipelines.engine.specs import ModelSpec, TaskSpec, canonical_json, spec_hash

REPO_ROOT = Path(__file__).resolve().parents[2]
LIBRARIES = ("medbench", "numpy", "pyarrow", "polars", "duckdb", "scikit-learn", "msgspec", "dagster",
             "torch", "transformers", "vllm")


def run_id(model: ModelSpec, task: TaskSpec, snapshot_id: str, package_sha256: str | None = None,
           dependencies_sha256: str | None = None, plugins: list[dict[str, str]] | tuple = (),
           judge: ModelSpec | None = None, official_splits: tuple[str, ...] = ("test",)) -> str:
    """The run id; an official run (a submitted package) adds the package's sha256 and the hash of
    its set of dependency wheels, so it never shares an id with medbench's own run of the same model
    and task (whose ids stay as they were), and another set of dependencies is another run.
    ``plugins`` (``pipelines.engine.plugin_identity``): the plug-in distributions' code it used,
    added only when there is any, so a changed plug-in makes new run ids and built-in ones stay.
    ``judge``: the model that grades the answers (rubric tasks only): its slug, revision and spec hash
    are added, so a result by another judge (or a changed judge spec) has an id of its own; tasks
    without a judge keep their ids. ``official_splits``: the splits an official package scored, added
    only when it is more than the test split (vitaldb-ioh's packages also score validation windows
    since issue 41), so an older package run on test windows alone is never reused for one."""
    fields = {
        "model": model.slug,
        "model_revision": model.revision,
        "model_spec_hash": spec_hash(model),
        "task": task.ref,
        "task_spec_hash": spec_hash(task),
        "dataset_snapshot": snapshot_id,
    }
    if package_sha256 is not None:
        fields["package_sha256"] = package_sha256
    if dependencies_sha256 is not None:
        fields["dependencies_sha256"] = dependencies_sha256
    if package_sha256 is not None and tuple(official_splits) != ("test",):
        fields["official_splits"] = list(official_splits)
    if plugins:
        fields["plugins"] = list(plugins)
    if judge is not None:
        fields["judge"] = {"model": judge.slug, "revision": judge.revision, "spec_hash": spec_hash(judge)}
    return hashlib.sha256(canonical_json(fields)).hexdigest()[:12]


@lru_cache(maxsize=1)
def code_revision() -> str:
    """The git commit of the code that computed a result, with ``+dirty`` for local changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def library_versions(names: tuple[str, ...] = LIBRARIES) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out
