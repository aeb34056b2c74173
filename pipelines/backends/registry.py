"""From a model spec to the object that produces its outputs.

The only place that knows which class serves which ``backend`` value; heavy libraries (torch,
transformers, vllm) are imported inside the backend modules, so choosing a rule model never
pays for them.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.backends.base import TextGenerator
from pipelines.backends.settings import (
    OpenAISettings,
    ReplaySettings,
    TransformersSettings,
    UniformChoiceRule,
    VllmSettings,
)
from pipelines.engine.specs import ModelSpec, TaskSpec
from warehouse.layout import DataDir


class NotRunnable(RuntimeError):
    """The model cannot run on this machine (missing extra, no GPU, no API key); says why."""


DEMO_ONLY = ("demo only: a simulated model whose replay outputs answer the generated demo items, "
             "never evaluated on real data")


def is_demo_only(model: ModelSpec) -> bool:
    """A model whose spec says its outputs answer the demo items only (``ReplaySettings.demo_only``)."""
    return bool(getattr(model.settings, "demo_only", False))


def not_runnable_reason(model: ModelSpec, data: DataDir | None = None) -> str | None:
    """Why ``model`` cannot run here (on ``data``, when given), or None when it can."""
    if data is not None and is_demo_only(model) and data.kind() != "demo":
        return DEMO_ONLY
    if model.backend in ("rule", "sklearn", "replay"):
        return None
    from pipelines.backends.availability import check_backend

    return check_backend(model.backend, model.settings)


def max_new_tokens(model: ModelSpec, task: TaskSpec) -> int:
    """The task's cap, lowered by the model spec's own ``max_new_tokens`` where it sets one."""
    assert task.choice is not None
    own = getattr(model.settings, "max_new_tokens", None)  # language-model settings only
    return min(task.choice.max_new_tokens if own is None else own, task.choice.max_new_tokens)


def text_generator(model: ModelSpec, task: TaskSpec, data: DataDir) -> TextGenerator:
    reason = not_runnable_reason(model, data)
    if reason:
        raise NotRunnable(f"{model.slug}: {reason}")
    s = model.settings
    if model.backend == "rule":
        if not isinstance(s, UniformChoiceRule):
            raise NotRunnable(f"{model.slug}: rule {type(s).__struct_config__.tag!r} does not answer choice tasks")
        from pipelines.backends.rule import UniformChoiceGenerator

        return UniformChoiceGenerator.from_settings(s)
    if isinstance(s, ReplaySettings):
        from pipelines.backends.replay import ReplayGenerator

        return ReplayGenerator(Path(s.resolved or s.outputs).expanduser())
    tokens = max_new_tokens(model, task)
    if isinstance(s, TransformersSettings):
        from pipelines.backends.transformers_backend import TransformersGenerator

        return TransformersGenerator(
            model_path=resolve_model_path(s.model, s, data), max_new_tokens=tokens, batch_size=s.batch_size,
            device=s.device, dtype=s.dtype, revision=_hub_revision(model, s.model), num_threads=s.num_threads,
            chat_template_kwargs=s.chat_template_kwargs,
        )
    if isinstance(s, VllmSettings):
        from pipelines.backends.vllm_backend import VllmGenerator

        return VllmGenerator(model=resolve_model_path(s.model, s, data), max_new_tokens=tokens,
                             chunk_size=s.chunk_size, engine_kwargs=s.engine.kwargs(),
                             revision=_hub_revision(model, s.model), chat_template_kwargs=s.chat_template_kwargs)
    if isinstance(s, OpenAISettings):
        from pipelines.backends.availability import resolve_base_url
        from pipelines.backends.openai_backend import OpenAIChatGenerator

        return OpenAIChatGenerator(
            base_url=resolve_base_url(s), model=model.provider_model_id if s.model is None else s.model, max_new_tokens=tokens,
            api_key_env=s.api_key_env, concurrency=s.concurrency, timeout_s=s.timeout_s, max_retries=s.max_retries,
            checkpoint_every=s.checkpoint_every, extra_body=s.extra_body,
        )
    raise NotRunnable(f"{model.slug}: backend {model.backend!r} does not answer choice tasks")


def _hub_revision(model: ModelSpec, name: str) -> str | None:
    """The spec's revision pins a hub id; a built-in model or a local folder has none to pin."""
    return None if name.startswith("builtin:") or Path(name).exists() else model.revision


def resolve_model_path(name: str, settings: TransformersSettings | VllmSettings, data: DataDir) -> str:
    """``builtin:tiny-llama`` is built locally (seeded, no hub); anything else is passed through."""
    from pipelines.backends.tiny_llm import resolve_model_path as resolve

    return resolve(name, data.models, seed=settings.seed)


def window_scorer(model: ModelSpec, task: TaskSpec):
    if model.backend not in ("rule", "sklearn"):
        raise NotRunnable(f"{model.slug}: backend {model.backend!r} does not score windows")
    from pipelines.tasks.vitaldb_ioh.baselines import make_window_scorer

    return make_window_scorer(model.settings, task.ioh)
