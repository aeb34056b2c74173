"""One evaluation (a task version x a model on one dataset snapshot), with the plug-ins that run it.

Why the family and the backend ride along: the engine is handed its plug-ins (``Plugins``) once,
at planning, and every later step (predict, score, checks, the Dagster assets) reaches them
through the evaluation, so nothing downstream looks a family or a backend up by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from medbench.protocols import Backend, TaskFamily
from medbench.specs import DatasetSpec, ModelSpec, TaskSpec


def partition_key(task_ref: str, model_slug: str) -> str:
    return f"{task_ref}|{model_slug}"


def split_partition_key(key: str) -> tuple[str, str]:
    task_ref, _, model_slug = key.partition("|")
    return task_ref, model_slug


@dataclass(frozen=True)
class Evaluation:
    task: TaskSpec
    model: ModelSpec
    dataset: DatasetSpec
    snapshot_id: str
    run_id: str
    family: TaskFamily
    backend: Backend
    # plug-in distributions' code it uses ({name, version, files_sha256}; ``versions.plugins``)
    plugins: tuple = ()
    # a task graded by a judge model (``TaskFamily.judge``): the judge's spec and its backend; None otherwise
    judge: ModelSpec | None = None
    judge_backend: Backend | None = None

    @property
    def partition_key(self) -> str:
        return partition_key(self.task.ref, self.model.slug)
