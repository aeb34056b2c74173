"""What a submission may carry (``POST /v1/submissions``), as strict Structs: the spec decoder's rules
(unknown keys are errors) with only the settings an outsider may choose.

The settings here are not the backends' own: each is a short list of harmless knobs, and the backend
settings a run gets are built from them by medbench (``submission_check``), so nothing a submitter
writes reaches the filesystem or the network as given: no local path, no URL, no device or thread
choice, no free-form engine arguments, no API key.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from medbench.canonical import StrictStruct

ACCEPTED_BACKENDS = ("transformers", "vllm", "openai")
REFUSED_BACKENDS = {
    "replay": "replay scores outputs from a file on the server; submit the model itself instead",
    "rule": "rule models are medbench's own baselines",
    "sklearn": "sklearn models are trained by medbench from its own specs",
}


class SubmittedTransformers(StrictStruct):
    model: str  # a Hub model id, "org/name"
    seed: int = 0
    max_new_tokens: int | None = None
    batch_size: int = 16
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"


class SubmittedVllmEngine(StrictStruct):
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    dtype: Literal["auto", "bfloat16", "float16", "float32"] | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None


class SubmittedVllm(StrictStruct):
    model: str  # a Hub model id, "org/name"
    seed: int = 0
    max_new_tokens: int | None = None
    chunk_size: int = 256
    engine: SubmittedVllmEngine = SubmittedVllmEngine()


class SubmittedOpenAI(StrictStruct):
    endpoint: str  # the name of an endpoint the maintainers configured (submissions.toml), never a URL
    model: str | None = None  # the name the endpoint knows the model by; default: provider_model_id
    max_new_tokens: int | None = None
    concurrency: int = 8


SUBMITTED_SETTINGS = {"transformers": SubmittedTransformers, "vllm": SubmittedVllm, "openai": SubmittedOpenAI}


class SubmittedModel(StrictStruct):
    """A model spec without ``provider`` (the token's owner), ``tasks`` and ``price`` (medbench's)."""

    slug: str
    name: str
    type: Literal["llm"]
    provider_model_id: str
    revision: str
    backend: str
    settings: dict = {}
    description: str = ""
    release_date: dt.date | None = None
    knowledge_cutoff: dt.date | None = None
    training_data: list[str] = []


class SubmittedResources(StrictStruct):
    pool: Literal["cpu", "gpu"]
    memory_gib: float
    wall_minutes: float


class SubmissionRequest(StrictStruct):
    model: SubmittedModel
    tasks: list[str]
    tier: Literal["baseline", "official"] = "baseline"
    package_sha256: str | None = None
    resources: SubmittedResources | None = None
