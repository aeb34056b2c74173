"""Run an approved official submission: its kept package, for each of its tasks, in the sandbox.

The submission moves ``queued -> running -> evaluated`` (with its run ids) or ``failed`` with the
package's one-line reason; a failed submission is not charged to its owner's submission quota (the
store's rule), but its sandbox time is charged to the owner's sandbox budget like any run's, and an
owner past that budget is refused before the sandbox starts (docs/official-tier.md). It publishes
nothing: results written for its other tasks in the same attempt are removed
before anything is published. The submitted model spec is the one the submission recorded (the
spec file, when the maintainers have added it to ``specs/models``).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Callable

import msgspec

from medbench.specs import ModelSpec, model_spec_type
from pipelines.engine.release import publish_results
from pipelines.engine.specs import Specs
from pipelines.engine.submission_policy import check_sandbox_budget, load_policy
from pipelines.official.evaluate import Submitter, evaluate_official, plan_official, resolve_dependencies
from pipelines.official.package import PackageFailed
from pipelines.official.policy import from_env
from medbench.layout import DataDir
from medbench.submissions import Submission, SubmissionRefused, SubmissionStore

Log = Callable[[str], None]


def submitted_model(specs: Specs, submission: Submission) -> ModelSpec:
    """The model spec the submission recorded, decoded as a spec file would be, added to ``specs``."""
    slug = submission.model["slug"]
    if slug not in specs.models:
        backend = specs.plugins.backends.get(submission.model["backend"])
        spec = msgspec.convert(submission.model, model_spec_type(backend.name, backend.settings_type))
        specs.models[slug] = backend.check_spec(Path(f"submission {submission.id}"), spec)
    return specs.models[slug]


def kept_wheel(data: DataDir, submission: Submission) -> Path:
    found = sorted((data.packages / (submission.package_sha256 or "-")).glob("*.whl"))
    if not found:
        raise ValueError(f"submission {submission.id}: its package was never uploaded "
                         f"(PUT /v1/submissions/{submission.id}/package)")
    return found[0]


def run_submission(specs: Specs, data: DataDir, store: SubmissionStore, submission_id: str, log: Log) -> Submission:
    """Evaluate an approved (queued) official submission; its final state."""
    submission = store.get(submission_id)
    if submission.tier != "official" or submission.state != "queued":
        raise ValueError(f"submission {submission_id} is a {submission.tier} submission in state {submission.state}; "
                         "only approved (queued) official submissions run here")
    wheel = kept_wheel(data, submission)
    model = submitted_model(specs, submission)
    res = submission.resources
    policy = from_env(res.pool, res.memory_gib, res.wall_minutes) if res else from_env()
    try:
        check_sandbox_budget(store, load_policy(None, data), submission.owner)
    except SubmissionRefused as refused:
        log(f"submission {submission_id} not run: {refused}")
        return store.transition(submission_id, "failed", str(refused))
    store.transition(submission_id, "running", f"package {wheel.name} runs in the sandbox ({policy.version})")
    submitter, made, run_ids = Submitter(submission.owner, submission.id), [], []
    scratch = Path(tempfile.mkdtemp(prefix="medbench-resolve-"))
    try:
        dependencies = resolve_dependencies(policy, wheel, scratch)  # once, outside the sandbox
        for task in submission.tasks:
            planned = plan_official(specs, data, task, model.slug, submission.package_sha256 or "",
                                    dependencies.set_sha256)
            fresh = not data.result_path(planned.run_id).exists()
            record = evaluate_official(specs, data, task, model.slug, wheel, submitter, policy, log,
                                       submission.package_sha256, dependencies=dependencies)
            run_ids.append(record.run_id)
            if fresh:
                made.append(record.run_id)
    except PackageFailed as failed:
        for run in made:
            shutil.rmtree(data.run_dir(run), ignore_errors=True)
        log(f"submission {submission_id} failed: {failed}")
        return store.transition(submission_id, "failed", str(failed))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    publish_results(specs, data, log)
    return store.transition(submission_id, "evaluated", f"evaluated in the sandbox: {', '.join(run_ids)}",
                            run_ids=run_ids)
