"""An official evaluation: a submitted package's answers, scored by the task's own scorer.

Why through the engine: the package only answers (raw text for choice tasks, a probability for
score tasks); the family's own ``problem`` turns those answers into its predictions table exactly
as it does a backend's (its parser; its probability metadata), and the engine's metrics step
(``compute_metrics``) scores them with the task's metrics and intervals. So an official result is
a normal result, with its own run id (the package's sha256 and the hash of its dependency wheels are
part of it), its ``tier`` and its ``provenance``. Rule one applies to the exact package: the same
wheel and dependency wheels on the same model, task and snapshot is the same run id, reused, never
rerun.

The wheel is kept in the data directory (``packages/<sha256>/<file>``), its dependency wheels
beside it (``packages/<sha256>/dependencies/<set sha256>/``), and the package's answers beside the
predictions (``artifacts/<run_id>/package-answers.jsonl``), so ``medbench reproduce`` can install
exactly those wheels, rerun it in the same sandbox policy and compare its answers byte for byte.

Its file name is shared on purpose: the official tier's counterpart of the engine's or CLI's module
of the same name (docs/official-tier.md).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import msgspec
import numpy as np
import pyarrow as pa

from medbench.evaluation import Evaluation
from medbench.outcomes import Predicted, Usage, combined_usage
from medbench.protocols import FitAndScore, JudgesAnswers, TextChoice
from pipelines.engine.evaluate import compute_metrics, existing_result, resolve_evaluation, write_predictions
from pipelines.engine.generations import generation_key
from pipelines.engine.identity import run_id
from pipelines.engine.inputs import task_instances_path
from pipelines.engine.locks import evaluation_lock
from pipelines.engine.snapshots import current_snapshot
from pipelines.engine.specs import Specs
from pipelines.official.package import GROUP, check_wheel
from pipelines.official.policy import SandboxPolicy
from medbench.kinds import kind as kind_of
from pipelines.official.run import Answers, run_package
from pipelines.official.wheels import Dependencies, download, keep
from medbench.files import atomic_write_bytes
from medbench.layout import DataDir
from medbench.records import Provenance, ResultRecord

Log = Callable[[str], None]
ANSWERS_FILE = "package-answers.jsonl"


@dataclass(frozen=True)
class Submitter:
    """Who submitted the package: a token's owner (a provider namespace) and the submission, if any."""

    owner: str
    submission_id: str | None = None


def tier_for(ev: Evaluation, submitter: Submitter) -> str:
    """``official`` only when the submitter is the model's provider; anyone else's package is a baseline."""
    return "official" if submitter.owner == ev.model.provider else "baseline"


def plan_official(specs: Specs, data: DataDir, task_ref: str, model_slug: str, sha256: str,
                  dependencies_sha256: str) -> Evaluation:
    ev = resolve_evaluation(specs, data, task_ref, model_slug)
    return replace(ev, run_id=run_id(ev.model, ev.task, ev.snapshot_id, sha256, dependencies_sha256,
                                    plugins=ev.plugins, judge=ev.judge, official_splits=ev.family.official_splits))


def kept_dependencies_dir(data: DataDir, sha256: str, package_file: str, set_sha256: str) -> Path:
    """Where a package's dependency wheels are kept, by the package and the set's hash."""
    return data.package_path(sha256, package_file).parent / "dependencies" / set_sha256


def resolve_dependencies(policy: SandboxPolicy, wheel: Path, scratch: Path) -> Dependencies:
    """The package's dependency wheels, downloaded outside the sandbox into a fresh folder under
    ``scratch`` (the caller removes it once they are kept)."""
    return download(policy, wheel, Path(tempfile.mkdtemp(prefix="medbench-dependencies-", dir=scratch)))


def public_splits(ev: Evaluation, data: DataDir) -> tuple[list[dict], list[dict]]:
    """The test split's public instances and, where the family's ``official_splits`` names it, the
    validation split's (inputs only, never a label: a family whose finish fits on validation scores
    gets them from the package too, as from a backend); else no validation instances."""
    instances = task_instances_path(data, ev.task, ev.family)
    snapshot = current_snapshot(data, ev.task.dataset).path
    test = ev.family.public_instances(ev.task, snapshot, instances)
    validation = (ev.family.public_validation_instances(ev.task, snapshot, instances)
                  if "validation" in ev.family.official_splits else [])
    return test, validation


def public_inputs(ev: Evaluation, data: DataDir) -> tuple[list[dict], dict]:
    """What the package is handed: the public instances (test, then validation where the family gives
    them; no label, no answer, no split) and the context."""
    test, validation = public_splits(ev, data)
    context = {"task": ev.task.ref, "kind": ev.family.kind, "answer_field": kind_of(ev.family.kind).answer_field,
               "model": ev.model.slug, "revision": ev.model.revision}
    return [*test, *validation], context


def answer(ev: Evaluation, data: DataDir, wheel: Path, policy: SandboxPolicy, dependencies: Dependencies,
           weights: Path | None = None) -> Answers:
    """Install and run the package in the sandbox on the public instances (PackageFailed on any breach)."""
    public, context = public_inputs(ev, data)
    return run_package(policy, wheel, public, context, [p["instance_id"] for p in public], ev.family.kind,
                       weights=weights, dependencies=dependencies)


def predictions_from(ev: Evaluation, data: DataDir, answers: Answers,
                     log: Log) -> tuple[pa.Table, dict, dict | None]:
    """The family's predictions table from the package's answers, through the family's own problem;
    what its finish adds to the result's config (a score task's validation recalibration and alarm
    thresholds, fitted on the package's validation scores exactly as on a backend's; a judged task's
    judge); and a judged task's judging usage (else None).

    A judged kind's answers (a rubric task's free text) are graded by the task's judge, by the path
    that regrades stored answers (``JudgesAnswers.judge_answers``); its replies are stored under a key
    of the answers' bytes, so ``medbench reproduce`` rereads them instead of calling the judge again."""
    problem = ev.family.problem(ev, task_instances_path(data, ev.task, ev.family))
    if isinstance(problem, JudgesAnswers):
        key = generation_key({"official_answers_sha256": hashlib.sha256(answers.answers_jsonl).hexdigest()})
        judged = problem.judge_answers(ev, data, dict(answers.values), key, log)
        return judged.table, judged.config, judged.usage["judging"]
    if isinstance(problem, TextChoice):
        return problem.parse(dict(answers.values)), {}, None
    if isinstance(problem, FitAndScore):
        test, validation = public_splits(ev, data)  # each in the order ``problem`` takes its split
        table = problem.table(np.asarray([answers.values[p["instance_id"]] for p in test], dtype=np.float64))
        finished: dict = {}
        if problem.finish is not None:  # the package's scores are probabilities: only the twins are fitted
            val_scores = np.asarray([answers.values[p["instance_id"]] for p in validation], dtype=np.float64)
            metadata, finished = problem.finish(val_scores, True, log)
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
        return table, finished, None
    raise TypeError(f"family {ev.family.name!r} declared a {type(problem).__name__}")


def evaluate_official(specs: Specs, data: DataDir, task_ref: str, model_slug: str, wheel: Path,
                      submitter: Submitter, policy: SandboxPolicy, log: Log,
                      expected_sha256: str | None = None, weights: Path | None = None,
                      dependencies: Dependencies | None = None) -> ResultRecord:
    """Run the package and write its result (not published: ``release`` does that); PackageFailed
    with a one-line reason leaves nothing under ``artifacts/``. ``dependencies``: the wheels
    resolved beforehand (``resolve_dependencies``), else resolved here."""
    sha = check_wheel(wheel, expected_sha256)
    if dependencies is None:
        scratch = Path(tempfile.mkdtemp(prefix="medbench-resolve-"))
        try:
            return evaluate_official(specs, data, task_ref, model_slug, wheel, submitter, policy, log, sha, weights,
                                     resolve_dependencies(policy, wheel, scratch))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    ev = plan_official(specs, data, task_ref, model_slug, sha, dependencies.set_sha256)
    done = existing_result(data, ev.run_id)
    if done is not None:
        log(f"{ev.partition_key}: package {sha[:12]} was already evaluated (run {ev.run_id}); reusing it")
        return done
    kept = data.package_path(sha, wheel.name)
    if not kept.exists():
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(wheel, kept)
    dependencies = keep(dependencies, kept_dependencies_dir(data, sha, wheel.name, dependencies.set_sha256))
    answers = answer(ev, data, kept, policy, dependencies, weights)
    log(f"{ev.partition_key}: package {sha[:12]} answered {len(answers.values)} instances in the sandbox")
    table, finished, judging = predictions_from(ev, data, answers, log)
    config = {"official": {"package_sha256": sha, "package_file": wheel.name, "entry_point_group": GROUP,
                           "installed": answers.installed, "sandbox": policy.describe(),
                           "dependencies_sha256": dependencies.set_sha256, "dependencies": list(dependencies.wheels),
                           "tree_limit": answers.limit,
                           "weights": str(weights) if weights is not None else None},
              "bootstrap": msgspec.to_builtins(ev.task.bootstrap), "intervals": msgspec.to_builtins(ev.task.intervals),
              "parser": ev.family.parser_version(ev.task), **finished}
    usage = Usage(wall_seconds=answers.wall_seconds, device_seconds=answers.wall_seconds,
                  hardware=f"medbench sandbox ({policy.pool} pool)")
    # a judged task's usage keeps the package's answering and medbench's judging apart
    usage_dict = asdict(usage) if judging is None else combined_usage(usage, Usage(**judging))
    with evaluation_lock(data, ev.run_id, log):
        write_predictions(ev, data, Predicted(table=table, usage=usage_dict, config=config))
        atomic_write_bytes(data.run_dir(ev.run_id) / ANSWERS_FILE, answers.answers_jsonl)
    provenance = Provenance(submitted_by=submitter.owner, submission_id=submitter.submission_id,
                            package_sha256=sha, sandbox=policy.describe())
    return compute_metrics(ev, specs, data, log, tier=tier_for(ev, submitter), provenance=provenance)
