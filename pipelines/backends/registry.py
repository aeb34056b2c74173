"""The built-in backends: what serves each model spec ``backend`` value, as ``Backend`` plug-ins.

Each class declares its ``name`` and ``settings_type`` (which types a model spec's ``[settings]``
table, ``pipelines.backends.settings``), its pool, what stops it running here, and the problems it
answers (a ``TextChoice`` through a text generator, a ``FitAndScore`` through a window scorer);
``pyproject.toml`` registers them in the entry-point group ``medbench.backends``. A backend reads
its own settings only: the task's token cap and its step length arrive as arguments. Heavy
libraries (torch, transformers, vllm, sklearn) are imported inside the backend that runs them, so
choosing a rule model never pays for them.

Its file name is shared on purpose: the built-in backends, in ``medbench.registry``'s one
generic ``Registry``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Sequence

from pipelines.backends.availability import check_backend, resolve_api_key_env, resolve_base_url
from pipelines.backends.pools import pool_of
from pipelines.backends.redact import has_userinfo, public_settings, redact_url
from pipelines.backends.replay import ReplayGenerator
from pipelines.backends.replay_pin import pin_replay
from pipelines.backends.rule import UniformChoiceGenerator
from pipelines.backends.settings import (
    OpenAISettings,
    ReplaySettings,
    RuleSettings,
    SklearnSettings,
    TransformersSettings,
    MatchingJudgeRule,
    UniformChoiceRule,
    VllmSettings,
)
from pipelines.backends.window_scorers import make_window_scorer
from medbench.outcomes import Sampling
from medbench.protocols import Backend, NotRunnable, TextGenerator, WindowScorer
from medbench.specs import ModelSpec, SpecError, query_or_fragment
from medbench.layout import DataDir

__all__ = ["NotRunnable", "not_runnable_reason", "BUILTIN_BACKENDS", "DEMO_ONLY"]

DEMO_ONLY = ("demo only: a simulated model whose replay outputs answer the generated demo items, "
             "never evaluated on real data")


class _Builtin(Backend):
    """What every built-in backend shares: results publish its settings through the allow-list."""

    def published(self, settings: Any, *, keep_defaults: bool = True) -> dict[str, Any]:
        return public_settings(settings, keep_defaults=keep_defaults)

    def pool(self, model: ModelSpec) -> str:
        return pool_of(model)


class _WindowScoring(_Builtin):
    def window_scorer(self, model: ModelSpec, step_seconds: int) -> WindowScorer:
        return make_window_scorer(model.settings, step_seconds)


class RuleBackend(_WindowScoring):
    """Rules that need no training: a seeded uniform choice (text tasks) or a window rule."""

    name: ClassVar[str] = "rule"
    settings_type: ClassVar[Any] = RuleSettings

    def text_generator(self, model: ModelSpec, data: DataDir, *, max_new_tokens: int,
                       options: Sequence[str], sampling: Sampling | None = None) -> TextGenerator:
        s = model.settings
        if isinstance(s, MatchingJudgeRule):
            if reason := self.not_runnable_reason(model, data):
                raise NotRunnable(f"{model.slug}: {reason}")
            from pipelines.backends.matching_judge import MatchingJudgeGenerator

            return MatchingJudgeGenerator(s.seed, s.flip)
        if not isinstance(s, UniformChoiceRule):
            raise NotRunnable(f"{model.slug}: rule {type(s).__struct_config__.tag!r} does not answer choice tasks")
        return UniformChoiceGenerator.from_settings(s, options)

    def demo_only(self, model: ModelSpec) -> bool:
        return isinstance(model.settings, MatchingJudgeRule) and model.settings.demo_only

    def not_runnable_reason(self, model: ModelSpec, data: DataDir | None = None) -> str | None:
        """The simulated judge grades the generated demo answers only."""
        if data is not None and self.demo_only(model) and data.demo_or_real() != "demo":
            return DEMO_ONLY
        return None


class SklearnBackend(_WindowScoring):
    """scikit-learn estimators on window features, fitted on train and tuned on validation."""

    name: ClassVar[str] = "sklearn"
    settings_type: ClassVar[Any] = SklearnSettings

    def fit_seed(self, model: ModelSpec) -> int | None:
        return model.settings.seed


class ReplayBackend(_Builtin):
    """Outputs read back from a JSONL file; the file's content is the model's revision."""

    name: ClassVar[str] = "replay"
    settings_type: ClassVar[Any] = ReplaySettings

    def check_spec(self, path: Path, spec: ModelSpec) -> ModelSpec:
        return pin_replay(path, spec, SpecError)

    def demo_only(self, model: ModelSpec) -> bool:
        return model.settings.demo_only

    def not_runnable_reason(self, model: ModelSpec, data: DataDir | None = None) -> str | None:
        """A ``demo_only`` replay (the simulated panel) answers the generated demo items only."""
        if data is not None and self.demo_only(model) and data.demo_or_real() != "demo":
            return DEMO_ONLY
        return None

    def watched_files(self, model: ModelSpec) -> list[Path]:
        return [Path(model.settings.resolved)]

    def text_generator(self, model: ModelSpec, data: DataDir, *, max_new_tokens: int,
                       options: Sequence[str], sampling: Sampling | None = None) -> TextGenerator:
        if reason := self.not_runnable_reason(model, data):
            raise NotRunnable(f"{model.slug}: {reason}")
        s = model.settings
        return ReplayGenerator(Path(s.resolved or s.outputs).expanduser())


class _LanguageModel(_Builtin):
    """A language model: machine requirements, and its own ``max_new_tokens`` lowering the task's cap."""

    def not_runnable_reason(self, model: ModelSpec, data: DataDir | None = None) -> str | None:
        return check_backend(self.name, model.settings)

    def max_new_tokens(self, model: ModelSpec, cap: int) -> int:
        own = model.settings.max_new_tokens
        return min(cap if own is None else own, cap)

    def _checked(self, model: ModelSpec) -> None:
        reason = self.not_runnable_reason(model)
        if reason:
            raise NotRunnable(f"{model.slug}: {reason}")


class TransformersBackend(_LanguageModel):
    name: ClassVar[str] = "transformers"
    settings_type: ClassVar[Any] = TransformersSettings

    def text_generator(self, model: ModelSpec, data: DataDir, *, max_new_tokens: int,
                       options: Sequence[str], sampling: Sampling | None = None) -> TextGenerator:
        self._checked(model)
        from pipelines.backends.transformers_backend import TransformersGenerator

        s = model.settings
        path, revision = model_source(model, data)
        return TransformersGenerator(
            model_path=path, max_new_tokens=max_new_tokens, batch_size=s.batch_size,
            device=s.device, dtype=s.dtype, revision=revision, num_threads=s.num_threads,
            chat_template_kwargs=s.chat_template_kwargs, sampling=sampling,
        )


class VllmBackend(_LanguageModel):
    name: ClassVar[str] = "vllm"
    settings_type: ClassVar[Any] = VllmSettings

    def devices(self, model: ModelSpec) -> int:
        return model.settings.engine.devices

    def text_generator(self, model: ModelSpec, data: DataDir, *, max_new_tokens: int,
                       options: Sequence[str], sampling: Sampling | None = None) -> TextGenerator:
        self._checked(model)
        from pipelines.backends.vllm_backend import VllmGenerator

        s = model.settings
        path, revision = model_source(model, data)
        return VllmGenerator(model=path, max_new_tokens=max_new_tokens, chunk_size=s.chunk_size,
                             engine_kwargs=s.engine.kwargs(), revision=revision,
                             chat_template_kwargs=s.chat_template_kwargs, sampling=sampling)


class OpenAIBackend(_LanguageModel):
    name: ClassVar[str] = "openai"
    settings_type: ClassVar[Any] = OpenAISettings

    def check_spec(self, path: Path, spec: ModelSpec) -> ModelSpec:
        if has_userinfo(spec.settings.base_url or ""):
            raise SpecError(f"{path}: key `settings.base_url` holds credentials (user:password@): remove "
                            "them and name the key's environment variable in `settings.api_key_env`")
        if (extra := query_or_fragment(spec.settings.base_url or "")) is not None:
            raise SpecError(f"{path}: key `settings.base_url`: {redact_url(spec.settings.base_url)} has {extra}; "
                            "requests go to {base_url}/chat/completions, so give the server's path only")
        s = spec.settings
        if s.endpoint is not None:
            from pipelines.backends.endpoints import EndpointError, check_name

            try:
                check_name(s.endpoint)
            except EndpointError as exc:
                raise SpecError(f"{path}: key `settings.endpoint`: {exc}") from None
            given = [k for k in ("base_url", "base_url_env", "api_key_env") if getattr(s, k) is not None]
            if given:
                raise SpecError(f"{path}: key `settings.endpoint`: a named endpoint brings its own address and key; "
                                f"remove {', '.join('settings.' + k for k in given)}")
        return spec

    def text_generator(self, model: ModelSpec, data: DataDir, *, max_new_tokens: int,
                       options: Sequence[str], sampling: Sampling | None = None) -> TextGenerator:
        self._checked(model)
        from pipelines.backends.openai_backend import OpenAIChatGenerator

        s = model.settings
        return OpenAIChatGenerator(
            base_url=resolve_base_url(s), model=model.provider_model_id if s.model is None else s.model,
            max_new_tokens=max_new_tokens, api_key_env=resolve_api_key_env(s), concurrency=s.concurrency,
            timeout_s=s.timeout_s, max_retries=s.max_retries, checkpoint_every=s.checkpoint_every,
            extra_body=s.extra_body, sampling=sampling,
        )


BUILTIN_BACKENDS: tuple[type[Backend], ...] = (
    RuleBackend, SklearnBackend, ReplayBackend, TransformersBackend, OpenAIBackend, VllmBackend)
"""The classes ``pyproject.toml`` registers under ``medbench.backends`` (listed for the docs and tests)."""


_BY_NAME = {cls.name: cls for cls in BUILTIN_BACKENDS}


def not_runnable_reason(model: ModelSpec, data: DataDir | None = None) -> str | None:
    """Why ``model`` (of a built-in backend) cannot run here (on ``data``, when given), or None."""
    return _BY_NAME[model.backend]().not_runnable_reason(model, data)


def model_source(model: ModelSpec, data: DataDir) -> tuple[str, str | None]:
    """What a transformers or vllm model loads, and at which revision: for a submission, the Hub cache's
    folder at the pinned commit, never a folder of the same name; for a maintainer's spec, a built-in
    model, a local folder (no revision) or a Hub id at the spec's revision, as before."""
    name = model.settings.model
    if submitted(model, data):
        return hub_snapshot(name, model.revision), model.revision
    return resolve_model_path(name, model.settings, data), _hub_revision(model, name)


def submitted(model: ModelSpec, data: DataDir) -> bool:
    """Was ``model``'s spec written by the submissions desk (``DataDir.submitted_specs``)? Slugs are unique
    across the checkout's specs and the submitted ones (``pipelines.engine.specs``), so the file says it."""
    return (data.submitted_specs / "models" / f"{model.slug}.toml").is_file()


def hub_snapshot(repo_id: str, revision: str) -> str:
    """The Hub cache's folder of ``repo_id`` at ``revision`` (downloaded into the cache when missing).

    For a submitted model: its ``settings.model`` is a Hub id, but ``models/tiny-llama-seed0`` is also
    a relative path, and ``from_pretrained`` loads a folder of that name under the worker's current
    directory first, dropping the pinned revision (docs/submitting.md). The snapshot's
    absolute path in the cache is what the backend loads instead.
    """
    from huggingface_hub import snapshot_download

    return snapshot_download(repo_id=repo_id, revision=revision)


def _hub_revision(model: ModelSpec, name: str) -> str | None:
    """The spec's revision pins a hub id; a built-in model or a local folder has none to pin."""
    return None if name.startswith("builtin:") or Path(name).exists() else model.revision


def resolve_model_path(name: str, settings: TransformersSettings | VllmSettings, data: DataDir) -> str:
    """``builtin:tiny-llama`` is built locally (seeded, no hub); anything else is passed through."""
    from pipelines.backends.tiny_llm import resolve_model_path as resolve

    return resolve(name, data.models, seed=settings.seed)
