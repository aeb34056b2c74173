"""Which resource pool an evaluation draws on: ``gpu``, ``api`` or ``cpu``.

Why here: the backend is what knows what a model needs (a vLLM engine or transformers on CUDA holds
a GPU, an OpenAI-compatible endpoint holds API quota, rules and sklearn hold a CPU core), and the
orchestrator must bound each pool separately (one GPU cannot host four engines, an API can take
many calls). The limits themselves live in ``dagster.yaml`` (``pipelines.dagster.limits``).
"""

from __future__ import annotations

import os
from pathlib import Path

from medbench.specs import ModelSpec

POOLS = ("gpu", "api", "cpu")


def _cuda_visible() -> bool:
    """A CUDA device this process may use, judged without importing torch."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return Path("/dev/nvidia0").exists() or Path("/proc/driver/nvidia/gpus").exists()


def pool_of(model: ModelSpec) -> str:
    """The pool a run of ``model`` takes a slot in."""
    if model.backend == "openai":
        return "api"
    if model.backend == "vllm":
        return "gpu"
    if model.backend == "transformers":
        device = model.settings.device  # TransformersSettings (the backend checked above)
        if device.startswith("cuda") or (device == "auto" and _cuda_visible()):
            return "gpu"
    return "cpu"
