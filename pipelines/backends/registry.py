"""From a model spec to the object that produces its outputs.

The only place that knows which class serves which ``backend`` value; heavy libraries (torch,
transformers, vllm) are imported inside the backend modules, so choosing a rule model never
pays for them.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.backends.base import TextGenerator
from pipelines.engine.specs import ModelSpec, TaskSpec
from warehouse.layout import DataDir


class NotRunnable(RuntimeError):
    """The model cannot run on this machine (missing extra, no GPU, no API key); says why."""


def not_runnable_reason(model: ModelSpec) -> str | None:
    """Why ``model`` cannot run here, or None when it can."""
    if model.backend in ("rule", "sklearn", "replay"):
        return None
    from pipelines.backends.availability import check_backend

    return check_backend(model.backend, model.settings)


def max_new_tokens(model: ModelSpec, task: TaskSpec) -> int:
    """The task's cap, lowered by the model spec's own ``max_new_tokens`` where it sets one."""
    assert task.choice is not None
    cap = int(model.settings.get("max_new_tokens", task.choice.max_new_tokens))
    return min(cap, task.choice.max_new_tokens)


def text_generator(model: ModelSpec, task: TaskSpec, data: DataDir) -> TextGenerator:
    reason = not_runnable_reason(model)
    if reason:
        raise NotRunnable(f"{model.slug}: {reason}")
    s = model.settings
    if model.backend == "rule":
        if s.get("rule") != "uniform_choice":
            raise NotRunnable(f"{model.slug}: rule {s.get('rule')!r} does not answer choice tasks")
        from pipelines.backends.rule import UniformChoiceGenerator

        return UniformChoiceGenerator(seed=int(s["seed"]))
    if model.backend == "replay":
        from pipelines.backends.replay import ReplayGenerator

        return ReplayGenerator(Path(s["outputs"]).expanduser())
    tokens = max_new_tokens(model, task)
    name = str(s.get("model", ""))
    revision = None if name.startswith("builtin:") or Path(name).exists() else model.revision  # hub ids only
    if model.backend == "transformers":
        from pipelines.backends.transformers_backend import TransformersGenerator

        return TransformersGenerator(
            model_path=resolve_model_path(s["model"], s, data), max_new_tokens=tokens,
            batch_size=int(s.get("batch_size", 16)), device=s.get("device", "auto"), dtype=s.get("dtype", "auto"),
            revision=revision, num_threads=s.get("num_threads"), chat_template_kwargs=s.get("chat_template_kwargs"),
        )
    if model.backend == "vllm":
        from pipelines.backends.vllm_backend import VllmGenerator

        return VllmGenerator(model=resolve_model_path(s["model"], s, data), max_new_tokens=tokens,
                             chunk_size=int(s.get("chunk_size", 256)), engine_kwargs=dict(s.get("engine", {})),
                             revision=revision, chat_template_kwargs=s.get("chat_template_kwargs"))
    if model.backend == "openai":
        from pipelines.backends.availability import resolve_base_url
        from pipelines.backends.openai_backend import OpenAIChatGenerator

        return OpenAIChatGenerator(
            base_url=resolve_base_url(s), model=s.get("model", model.provider_model_id), max_new_tokens=tokens,
            api_key_env=s.get("api_key_env"), concurrency=int(s.get("concurrency", 8)),
            timeout_s=float(s.get("timeout_s", 120)), max_retries=int(s.get("max_retries", 6)),
            checkpoint_every=int(s.get("checkpoint_every", 32)), extra_body=s.get("extra_body"),
        )
    raise NotRunnable(f"{model.slug}: backend {model.backend!r} does not answer choice tasks")


def resolve_model_path(name: str, settings: dict, data: DataDir) -> str:
    """``builtin:tiny-llama`` is built locally (seeded, no hub); anything else is passed through."""
    from pipelines.backends.tiny_llm import resolve_model_path as resolve

    return resolve(name, data.models, seed=int(settings.get("seed", 0)))


def window_scorer(model: ModelSpec, task: TaskSpec):
    if model.backend not in ("rule", "sklearn"):
        raise NotRunnable(f"{model.slug}: backend {model.backend!r} does not score windows")
    from pipelines.tasks.vitaldb_ioh.baselines import make_window_scorer

    return make_window_scorer(dict(model.settings), task.ioh)
