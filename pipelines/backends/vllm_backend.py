"""Generation with vLLM's offline engine: the fast path for open-weight models on GPUs.

vLLM batches continuously, so the more prompts it sees at once the faster it goes; a checkpoint
only after the whole run would risk hours of GPU work on a crash. Chunks (256 prompts by default)
are the compromise: large enough to keep the engine full, small enough that a kill loses little.

Prompts are rendered with the model's chat template and tokenised here, then handed to the engine
as token ids, so every model gets exactly one BOS token whatever its template and tokenizer do.
Engine settings (parallelism, dtype, context length, memory share, ...) come verbatim from the
model spec's ``[settings.engine]`` table: scaling out is configuration, not code. vllm is an
optional extra, imported only when an engine starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pipelines.engine.generations import Generation, GenerationStore
from pipelines.backends.accounting import chunks, cpu_hardware, pending_items, stored_usage
from pipelines.backends.availability import VLLM_EXTRA, BackendUnavailable, parallel_devices
from pipelines.backends.base import PromptItem, Sampling, Usage
from pipelines.engine.progress import Progress


class VllmGenerator:
    """Greedy generation (temperature 0, ``max_tokens`` = max new tokens, no stop strings), or sampled
    generation where ``sampling`` says so (a rubric judge at its spec's temperature): each prompt then
    draws at that temperature with its own seed (``Sampling.item_seed``), so a judge's samples differ
    and a rerun draws the same.

    ``engine_kwargs`` go to ``vllm.LLM`` unchanged (tensor_parallel_size, pipeline_parallel_size,
    dtype, max_model_len, gpu_memory_utilization, enforce_eager, ...). ``revision`` pins the hub
    revision of ``model``. ``chat_template_kwargs`` go to the chat template (e.g.
    ``{"enable_thinking": false}`` for models whose template switches reasoning).
    """

    def __init__(
        self,
        model: str,
        max_new_tokens: int,
        chunk_size: int = 256,
        engine_kwargs: dict[str, Any] | None = None,
        revision: str | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
    ):
        if max_new_tokens < 1 or chunk_size < 1:
            raise ValueError("max_new_tokens and chunk_size must be >= 1")
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.chunk_size = chunk_size
        self.engine_kwargs = dict(engine_kwargs or {})
        self.revision = revision
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.sampling = sampling if sampling is not None and not sampling.greedy else None
        self._llm: Any = None
        self._unbilled_start_s = 0.0  # engine start time not yet counted in a generate() call

    # -- engine ------------------------------------------------------------------------------

    def start(self, log: Callable[[str], None]) -> None:
        """Start the engine (once); generate() calls it, a benchmark may call it beforehand."""
        if self._llm is not None:
            return
        try:
            from vllm import LLM
        except ImportError as exc:
            raise BackendUnavailable(f"not runnable here: needs vllm ({VLLM_EXTRA}): {exc}") from None
        log(f"starting vLLM engine for {self.model} with {self.engine_kwargs or 'default settings'}")
        began = time.monotonic()
        kwargs = dict(self.engine_kwargs)
        if self.revision is not None:
            kwargs.setdefault("revision", self.revision)
        # never code from the model's repository, and weights from safetensors only (never a pickle):
        # specs may come from outside (POST /v1/submissions)
        kwargs["trust_remote_code"] = False
        kwargs.setdefault("load_format", "safetensors")
        self._llm = LLM(model=self.model, **kwargs)
        self._unbilled_start_s += time.monotonic() - began
        log(f"vLLM engine ready in {time.monotonic() - began:.1f}s on {self.hardware()}")

    @property
    def engine(self) -> Any:
        """The running ``vllm.LLM`` (after start())."""
        if self._llm is None:
            raise RuntimeError("the engine is not started; call start() first")
        return self._llm

    def device_count(self) -> int:
        return parallel_devices(self.engine_kwargs)

    def hardware(self) -> str:
        try:
            from vllm.platforms import current_platform
        except ImportError as exc:
            raise BackendUnavailable(f"not runnable here: needs vllm ({VLLM_EXTRA}): {exc}") from None

        if current_platform.is_cpu():
            return cpu_hardware()
        name = current_platform.get_device_name(0)
        n = self.device_count()
        return f"{n}x {name}" if n > 1 else name

    # -- TextGenerator -----------------------------------------------------------------------

    def generate(self, items: Sequence[PromptItem], store: GenerationStore, log: Callable[[str], None]) -> Usage:
        began = time.monotonic()
        todo = pending_items(items, store)
        log(f"vllm {self.model}: {len(items) - len(todo)} of {len(items)} already generated")
        device_seconds = 0.0
        if todo:
            self.start(log)
            from vllm import SamplingParams

            tokenizer = self.engine.get_tokenizer()
            progress = Progress(f"generating with {self.model}", len(todo), log)
            for chunk in chunks(todo, self.chunk_size):
                prompts = [{"prompt_token_ids": self._chat_token_ids(tokenizer, item.prompt)} for item in chunk]
                params = [SamplingParams(**kw) for kw in self.sampling_params(chunk)]
                outputs = self.engine.generate(prompts, params, use_tqdm=False)
                store.append(_generations(chunk, outputs))
                progress.advance(len(chunk))
            # Every device of the engine is held while it runs, start-up included.
            device_seconds = (time.monotonic() - began + self._unbilled_start_s) * self.device_count()
            self._unbilled_start_s = 0.0
        return stored_usage(
            items,
            store,
            wall_seconds=time.monotonic() - began,
            device_seconds=device_seconds,
            hardware=self.hardware(),
        )

    def sampling_params(self, chunk: Sequence[PromptItem]) -> list[dict[str, Any]]:
        """``vllm.SamplingParams`` arguments per prompt: greedy, or the sampling temperature and the
        prompt's own seed."""
        if self.sampling is None:
            return [{"temperature": 0.0, "max_tokens": self.max_new_tokens} for _ in chunk]
        return [{"temperature": self.sampling.temperature, "seed": self.sampling.item_seed(item.instance_id),
                 "max_tokens": self.max_new_tokens} for item in chunk]

    def _chat_token_ids(self, tokenizer: Any, prompt: str) -> list[int]:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}],
            tokenize=False,
            add_generation_prompt=True,
            **self.chat_template_kwargs,
        )
        # The rendered template already holds the BOS token where the model wants one.
        return tokenizer.encode(text, add_special_tokens=False)


def _generations(chunk: Sequence[PromptItem], outputs: Sequence[Any]) -> list[Generation]:
    """One Generation per prompt, matched by position: LLM.generate returns outputs in input order."""
    if len(outputs) != len(chunk):
        raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(chunk)} prompts")
    return [
        Generation(
            instance_id=item.instance_id,
            output=out.outputs[0].text,
            prompt_tokens=len(out.prompt_token_ids),
            completion_tokens=len(out.outputs[0].token_ids),
        )
        for item, out in zip(chunk, outputs)
    ]
