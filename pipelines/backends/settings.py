"""The ``[settings]`` table of a model spec, typed per backend.

A model spec's ``backend`` chooses the Struct its ``[settings]`` table is decoded into (see
``MODEL_SETTINGS``), so a misspelt or unknown settings key is an error that names the file and the
key, like every other spec key, instead of a value silently left at its default. Where one backend
runs several kinds of model (the ``rule`` backend's rules, the ``sklearn`` backend's estimators),
the settings are a tagged union keyed by the field that says which (``rule``, ``estimator``), so
each kind accepts exactly its own keys.

Defaults are today's behaviour; a field equal to its default is left out of the spec hash and of
the generation key (``medbench.canonical``), while results publish every key, defaults
included, as ``config.backend_settings``; tests/unit/pipelines/test_specs.py locks every default. Only msgspec is imported here: torch, transformers and vllm stay inside the
backend that runs them.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec

from pipelines.backends.redact import public_settings
from medbench.canonical import SpecStruct, spec_builtins


class _Settings(SpecStruct):
    """Base of every backend settings Struct (strict, frozen, keyword-only).

    Each one sorts its fields for publishing (``pipelines.backends.redact``, an allow-list):
    ``public_fields`` are published as they are, ``url_fields`` without userinfo, query values or
    fragment, ``path_fields`` as a file name and sha256, and ``free_form_fields`` (tables passed
    through verbatim, where a secret may hide under any name) with every value ``<redacted>``. A
    field in none of them is published like a free-form one."""

    public_fields: ClassVar[frozenset[str]] = frozenset()
    url_fields: ClassVar[frozenset[str]] = frozenset()
    path_fields: ClassVar[frozenset[str]] = frozenset()
    free_form_fields: ClassVar[frozenset[str]] = frozenset()


# --------------------------------------------------------------------------- rule (no training)


class UniformChoiceRule(_Settings, tag_field="rule", tag="uniform_choice"):
    """``medbench/random``: one option per item, drawn from sha256 of ``"<seed>:<instance_id>"``."""

    seed: int

    public_fields: ClassVar[frozenset[str]] = frozenset({"seed"})


class NegLastMapRule(_Settings, tag_field="rule", tag="neg_last_map"):
    """Window score = minus the last valid MAP of the input."""


class LinearExtrapolationRule(_Settings, tag_field="rule", tag="linear_extrapolation"):
    """A line through the last ``fit_seconds`` of valid MAP, scored ``ahead_seconds`` after T."""

    fit_seconds: int
    ahead_seconds: int

    public_fields: ClassVar[frozenset[str]] = frozenset({"fit_seconds", "ahead_seconds"})


class MatchingJudgeRule(_Settings, tag_field="rule", tag="matching_judge"):
    """The demo's simulated rubric judge (``pipelines.backends.matching_judge``): string matching, with
    a seeded share ``flip`` of its verdicts flipped per judge sample."""

    seed: int
    flip: float
    demo_only: bool = True

    public_fields: ClassVar[frozenset[str]] = frozenset({"seed", "flip", "demo_only"})


RuleSettings = UniformChoiceRule | NegLastMapRule | LinearExtrapolationRule | MatchingJudgeRule


# --------------------------------------------------------------------------- sklearn (trained on the train split)


class _WindowModel(_Settings):
    """Window features of the trained models (pipelines.backends.window_scorers.FeatureSpec).

    ``seed`` is the fit seed (the estimator's ``random_state``) of a task whose ``[ioh]`` says
    ``fit_seed = "model"`` (vitaldb-ioh@0); under ``fit_seed = "task"`` (or without a seed here) the
    task's bootstrap seed is used (``pipelines.tasks.vitaldb_ioh.family.fit_seed``).
    """

    below: tuple[float, ...] = (65.0, 70.0, 75.0)
    recent_seconds: tuple[int, ...] = (30, 60)
    slope_seconds: int = 60
    first_seconds: int = 60
    seed: int | None = None

    public_fields: ClassVar[frozenset[str]] = frozenset(
        {"below", "recent_seconds", "slope_seconds", "first_seconds", "seed"})


class LogisticRegressionSettings(_WindowModel, tag_field="estimator", tag="logistic_regression"):
    """Each hyperparameter is a value or a list of candidates (chosen by validation AUROC)."""

    C: float | tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)
    max_iter: int | tuple[int, ...] = 1000

    public_fields: ClassVar[frozenset[str]] = _WindowModel.public_fields | {"C", "max_iter"}


class HistGradientBoostingSettings(_WindowModel, tag_field="estimator", tag="hist_gradient_boosting"):
    """Each hyperparameter is a value or a list of candidates (chosen by validation AUROC)."""

    learning_rate: float | tuple[float, ...] = (0.05, 0.1)
    max_leaf_nodes: int | tuple[int, ...] = (15, 31)
    max_iter: int | tuple[int, ...] = 200
    l2_regularization: float | tuple[float, ...] = 0.0

    public_fields: ClassVar[frozenset[str]] = _WindowModel.public_fields | {
        "learning_rate", "max_leaf_nodes", "max_iter", "l2_regularization"}


SklearnSettings = LogisticRegressionSettings | HistGradientBoostingSettings


# --------------------------------------------------------------------------- replay


class ReplaySettings(_Settings):
    """``outputs``: the JSONL file of ``{"instance_id", "output"}`` (``~`` is expanded; a relative
    path is relative to the spec file's folder, not to the current directory).

    ``resolved`` is filled in by the spec loader (the absolute path on this machine); it is a
    local field, so it is neither hashed nor published, and a spec file may not set it. What the
    file holds enters the ids through the model's revision instead (the loader sets it to the
    file's sha256), so replacing the file's content makes a new run rather than reusing a result
    made from other outputs.

    ``demo_only``: the outputs answer the generated demo items (the simulated panel,
    ``pipelines.datasets.clinicalqa.simulated``), so the model is evaluated in a demo data
    directory only; on real data its partitions are skipped with that reason, never scored."""

    outputs: str
    demo_only: bool = False
    resolved: str = ""

    public_fields: ClassVar[frozenset[str]] = frozenset({"demo_only"})
    local_fields: ClassVar[frozenset[str]] = frozenset({"resolved"})
    path_fields: ClassVar[frozenset[str]] = frozenset({"outputs"})


# --------------------------------------------------------------------------- language models


class TransformersSettings(_Settings):
    """``model``: a hub id, a local folder or ``builtin:tiny-llama`` (built with ``seed``).

    ``max_new_tokens`` lowers the task's cap (never raises it); ``num_threads`` None leaves torch's.
    """

    model: str
    seed: int = 0
    max_new_tokens: int | None = None
    batch_size: int = 16
    device: str = "auto"
    dtype: str = "auto"
    num_threads: int | None = None
    chat_template_kwargs: dict[str, Any] = {}

    public_fields: ClassVar[frozenset[str]] = frozenset(
        {"model", "seed", "max_new_tokens", "batch_size", "device", "dtype", "num_threads"})
    free_form_fields: ClassVar[frozenset[str]] = frozenset({"chat_template_kwargs"})


class VllmEngine(_Settings):
    """``[settings.engine]``: keyword arguments of ``vllm.LLM``.

    The keys our specs and the availability check use are typed, so a misspelt
    ``tensor_paralel_size`` is an error rather than a silently single-GPU engine; any other
    ``vllm.LLM`` argument goes in ``extra`` (``[settings.engine.extra]``), passed through verbatim.
    A key left unset is not passed, so vLLM's own default applies.
    """

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    dtype: str | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    enforce_eager: bool | None = None
    extra: dict[str, Any] = {}

    public_fields: ClassVar[frozenset[str]] = frozenset(
        {"tensor_parallel_size", "pipeline_parallel_size", "dtype", "max_model_len", "gpu_memory_utilization",
         "enforce_eager"})
    free_form_fields: ClassVar[frozenset[str]] = frozenset({"extra"})

    @property
    def devices(self) -> int:
        """The GPUs the engine holds: tensor x pipeline parallel size."""
        return self.tensor_parallel_size * self.pipeline_parallel_size

    def kwargs(self) -> dict[str, Any]:
        """The arguments for ``vllm.LLM``: the keys set to something other than their default, then ``extra``."""
        typed = {k: v for k, v in spec_builtins(self).items() if k != "extra" and v is not None}
        return {**typed, **self.extra}


class VllmSettings(_Settings):
    """``model``: a hub id, a local folder or ``builtin:tiny-llama``; ``chunk_size`` prompts per checkpoint."""

    model: str
    seed: int = 0
    max_new_tokens: int | None = None
    chunk_size: int = 256
    chat_template_kwargs: dict[str, Any] = {}
    engine: VllmEngine = VllmEngine()

    public_fields: ClassVar[frozenset[str]] = frozenset({"model", "seed", "max_new_tokens", "chunk_size", "engine"})
    free_form_fields: ClassVar[frozenset[str]] = frozenset({"chat_template_kwargs"})


class OpenAISettings(_Settings):
    """Any OpenAI-compatible server. ``model`` defaults to the spec's ``provider_model_id``;
    the URL is ``base_url``, else the variable ``base_url_env`` names; the key is read from the
    variable ``api_key_env`` names (never stored). ``endpoint`` instead names an endpoint the
    maintainers configured (``submissions.toml``, ``[endpoints.<name>]``), resolved when the model
    runs (``pipelines.backends.endpoints``): a submitted model names one and never carries a URL,
    and its spec hash does not change when the endpoint's address does."""

    model: str | None = None
    endpoint: str | None = None
    base_url: str | None = None
    base_url_env: str | None = None
    api_key_env: str | None = None
    max_new_tokens: int | None = None
    concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 6
    checkpoint_every: int = 32
    extra_body: dict[str, Any] = {}

    public_fields: ClassVar[frozenset[str]] = frozenset(
        {"model", "endpoint", "base_url_env", "api_key_env", "max_new_tokens", "concurrency", "timeout_s", "max_retries",
         "checkpoint_every"})
    url_fields: ClassVar[frozenset[str]] = frozenset({"base_url"})
    free_form_fields: ClassVar[frozenset[str]] = frozenset({"extra_body"})


MODEL_SETTINGS: dict[str, Any] = {
    "rule": RuleSettings,
    "sklearn": SklearnSettings,
    "replay": ReplaySettings,
    "transformers": TransformersSettings,
    "openai": OpenAISettings,
    "vllm": VllmSettings,
}
"""backend -> the type its ``[settings]`` table decodes into (each built-in ``Backend`` of
``pipelines.backends.registry`` declares the same type as its ``settings_type``)."""


def settings_for(backend: str, settings: Any) -> Any:
    """Typed settings of ``backend``: a Struct passes through; a mapping is decoded strictly.

    For callers that build settings in code (tests, benchmarks); spec files are decoded by the loader.
    """
    typ = MODEL_SETTINGS[backend]
    if isinstance(settings, msgspec.Struct):
        return settings
    if not isinstance(settings, Mapping):
        raise TypeError(f"{backend} settings must be a mapping or a settings Struct, got {type(settings).__name__}")
    return msgspec.convert(dict(settings), typ)


def published(settings: Any) -> dict[str, Any]:
    """What results publish as ``config.backend_settings``: every key, defaults included, so a
    result says exactly what ran even after a later code version changes a default; only the
    fields each Struct declares public are shown as they are, URLs lose their secrets, local paths
    become file names, and free-form values become ``<redacted>`` (``pipelines.backends.redact``)."""
    return public_settings(settings, keep_defaults=True)


def hashed(settings: Any) -> dict[str, Any]:
    """The settings as the spec hash and the generation key see them: defaults omitted."""
    return spec_builtins(settings)
