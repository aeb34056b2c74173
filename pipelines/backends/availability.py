"""Whether a model backend can run on this machine, decided before any model is loaded.

`medbench materialize` must skip a partition that cannot run here (no GPU, no optional extra,
no API key) with a reason a maintainer can act on, instead of failing deep inside torch or an
HTTP client. The checks look for modules without importing them, so asking is cheap and works
in the base install, which has neither torch nor vllm.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from collections.abc import Mapping
from typing import Any

from pipelines.backends.settings import (
    OpenAISettings,
    TransformersSettings,
    VllmSettings,
    settings_for,
)

TRANSFORMERS_EXTRA = "pip install -e .[transformers]"
VLLM_EXTRA = "pip install -e .[vllm]"


class BackendUnavailable(RuntimeError):
    """The backend cannot run on this machine; ``reason`` says why and what would fix it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def check_backend(backend: str, settings: Any) -> str | None:
    """A reason why ``backend`` with these spec settings cannot run here, or None if it can.

    ``settings`` is the backend's settings Struct (``pipelines.backends.settings``); a mapping is
    decoded into it strictly. Only the language-model backends have machine requirements; any
    other backend returns None.
    """
    if backend not in ("transformers", "vllm", "openai"):
        return None
    typed = settings_for(backend, settings)
    if isinstance(typed, TransformersSettings):
        return check_transformers(typed.device)
    if isinstance(typed, VllmSettings):
        return check_vllm(typed.engine.devices)
    return _check_openai(typed)


def require_backend(backend: str, settings: Any) -> None:
    reason = check_backend(backend, settings)
    if reason is not None:
        raise BackendUnavailable(reason)


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def check_transformers(device: str = "auto") -> str | None:
    """Why the transformers backend cannot run on ``device`` here, or None."""
    missing = [m for m in ("torch", "transformers", "tokenizers") if not _has_module(m)]
    if missing:
        return f"not runnable here: needs the transformers extra ({TRANSFORMERS_EXTRA}); missing {', '.join(missing)}"
    if device.startswith("cuda") and _cuda_device_count() == 0:
        return "not runnable here: the spec asks for device 'cuda' and this machine has no CUDA GPU"
    return None


def check_vllm(needed: int = 1) -> str | None:
    """Why a vLLM engine holding ``needed`` GPUs cannot run here, or None."""
    if not _has_module("vllm"):
        return f"not runnable here: needs vllm ({VLLM_EXTRA}) and an NVIDIA GPU"
    if _is_vllm_cpu_build():
        return None
    have = _cuda_device_count()
    if have == 0:
        return "not runnable here: vllm needs an NVIDIA GPU and this machine has none (the CPU build is vllm-cpu)"
    if have < needed:
        return (
            f"not runnable here: the spec's tensor x pipeline parallelism needs {needed} GPUs, this machine has {have}"
        )
    return None


def _check_openai(settings: OpenAISettings) -> str | None:
    if settings.endpoint:
        from pipelines.backends.endpoints import EndpointError, resolve_endpoint

        try:
            address = resolve_endpoint(settings.endpoint)
        except EndpointError as exc:
            return f"not runnable here: {exc}"
        if not address.base_url:
            return f"not runnable here: no server URL for the openai backend ({address.where})"
        return missing_api_key(address.api_key_env)
    if not resolve_base_url(settings):
        env = settings.base_url_env
        where = f"environment variable {env} is unset" if env else "the spec sets neither base_url nor base_url_env"
        return f"not runnable here: no server URL for the openai backend ({where})"
    return missing_api_key(settings.api_key_env)


def resolve_api_key_env(settings: Any) -> str | None:
    """The variable holding the key: the configured endpoint's when the spec names one, else the spec's."""
    settings = settings_for("openai", settings)
    if settings.endpoint:
        from pipelines.backends.endpoints import resolve_endpoint

        return resolve_endpoint(settings.endpoint).api_key_env
    return settings.api_key_env


def missing_api_key(key_env: str | None) -> str | None:
    """Why the API key named by ``key_env`` cannot be used (its variable is unset or empty), or None;
    also None when no key is needed (no ``key_env``)."""
    if key_env and not os.environ.get(key_env):
        return f"not runnable here: the API key variable {key_env} is not set"
    return None


def parallel_devices(engine: Mapping[str, Any]) -> int:
    """The GPUs a vLLM engine with these ``vllm.LLM`` keyword arguments holds: tensor x pipeline parallel size."""
    return int(engine.get("tensor_parallel_size", 1)) * int(engine.get("pipeline_parallel_size", 1))


def resolve_base_url(settings: Any) -> str | None:
    """The server URL of an openai-backend spec: ``base_url``, else the variable ``base_url_env``
    names (so a maintainer points the same spec at their own server without editing it); for a spec
    naming an ``endpoint``, that configured endpoint's URL (``endpoints.py``)."""
    settings = settings_for("openai", settings)
    if settings.endpoint:
        from pipelines.backends.endpoints import EndpointError, resolve_endpoint

        try:
            return resolve_endpoint(settings.endpoint).base_url
        except EndpointError:
            return None
    if settings.base_url:
        return settings.base_url
    env = settings.base_url_env
    return (os.environ.get(env) or None) if env else None


def _is_vllm_cpu_build() -> bool:
    try:
        importlib.metadata.distribution("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _cuda_device_count() -> int:
    if not _has_module("torch"):
        return 0
    import torch  # only reached when torch is installed; vllm and the transformers extra bring it

    return torch.cuda.device_count() if torch.cuda.is_available() else 0
