"""Text generation with Hugging Face transformers: small models on a CPU, or any model on one GPU.

This is the backend the default test run and the demo can always execute (the tiny built-in
model on a laptop CPU), so it follows the same rules as the big-model backends: the model's own
chat template around the user prompt, greedy decoding, no stop strings, and a durable checkpoint
after every batch. torch and transformers are optional extras, imported only when a run starts.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipelines.engine.generations import Generation, GenerationStore
from pipelines.backends.accounting import chunks, cpu_hardware, pending_items, stored_usage
from pipelines.backends.availability import BackendUnavailable, check_transformers
from pipelines.backends.base import PromptItem, Sampling, Usage
from pipelines.engine.progress import Progress


class TransformersGenerator:
    """Greedy chat generation with ``AutoModelForCausalLM.generate`` in left-padded batches.

    ``device``: "auto" (CUDA when present, else CPU), "cpu", "cuda" or "cuda:N".
    ``dtype``: "auto" (bfloat16 on CUDA, float32 on CPU) or a torch dtype name ("float16", ...).
    ``revision``: the hub revision to load; ignored for a local folder.
    ``num_threads``: torch's intra-op CPU threads for this process (None leaves torch's default).
    For a tiny model thread hand-offs cost more than they save: 1 is ~10x faster on 2 cores.
    ``chat_template_kwargs``: extra variables for the chat template (e.g. ``{"enable_thinking": false}``).
    ``sampling``: sample at its temperature instead of decoding greedily (a rubric judge at its spec's
    temperature); torch's generator is seeded before each batch from the batch's prompt ids
    (``Sampling.item_seed``), so a rerun of the same batches draws the same.
    """

    def __init__(
        self,
        model_path: str,
        max_new_tokens: int,
        batch_size: int = 16,
        device: str = "auto",
        dtype: str = "auto",
        revision: str | None = None,
        num_threads: int | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
    ):
        if max_new_tokens < 1 or batch_size < 1:
            raise ValueError("max_new_tokens and batch_size must be >= 1")
        self.model_path = str(model_path)
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.device = device
        self.dtype = dtype
        self.revision = revision
        self.num_threads = num_threads
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.sampling = sampling if sampling is not None and not sampling.greedy else None
        self._loaded: tuple[Any, Any, Any] | None = None  # (model, tokenizer, generation config)

    # -- TextGenerator -----------------------------------------------------------------------

    def generate(self, items: Sequence[PromptItem], store: GenerationStore, log: Callable[[str], None]) -> Usage:
        reason = check_transformers(self.device)
        if reason is not None:
            raise BackendUnavailable(reason)
        start = time.monotonic()
        todo = pending_items(items, store)
        log(f"transformers {Path(self.model_path).name}: {len(items) - len(todo)} of {len(items)} already generated")
        device_seconds = 0.0
        if todo:
            self._load(log)
            # Similar lengths side by side waste less compute on padding.
            todo.sort(key=lambda item: len(item.prompt))
            progress = Progress(f"generating with {Path(self.model_path).name}", len(todo), log)
            for batch in chunks(todo, self.batch_size):
                store.append(self._generate_batch(batch))
                progress.advance(len(batch))
            device_seconds = time.monotonic() - start
        return stored_usage(
            items,
            store,
            wall_seconds=time.monotonic() - start,
            device_seconds=device_seconds,
            hardware=self.hardware(),
        )

    # -- internals ---------------------------------------------------------------------------

    def hardware(self) -> str:
        import torch

        device = torch.device(self._device_name())
        if device.type == "cuda":
            return torch.cuda.get_device_name(device)
        return cpu_hardware()

    def _device_name(self) -> str:
        import torch

        if self.device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        return self.device

    def _torch_dtype(self):
        import torch

        if self.dtype == "auto":
            return torch.bfloat16 if self._device_name().startswith("cuda") else torch.float32
        return getattr(torch, self.dtype)

    def _load(self, log: Callable[[str], None]) -> None:
        if self._loaded is not None:
            return
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if self.num_threads is not None:
            torch.set_num_threads(self.num_threads)
        device = self._device_name()
        log(f"loading {self.model_path} on {device}")
        # no code from the model's repository ever runs, and weights load only from safetensors (never
        # a pickle): specs may come from outside (POST /v1/submissions)
        tokenizer = AutoTokenizer.from_pretrained(self.model_path, revision=self.revision, trust_remote_code=False)
        tokenizer.padding_side = "left"  # decoder-only models continue from the right edge
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(self.model_path, revision=self.revision, dtype=self._torch_dtype(),
                                                     trust_remote_code=False, use_safetensors=True)
        model = model.to(device).eval()
        self._loaded = (model, tokenizer, self.generation_config(model.generation_config, tokenizer))

    def generation_config(self, model_config: Any, tokenizer: Any) -> Any:
        """The model's generation config with this run's decoding (``decoding``) and padding."""
        config = copy.deepcopy(model_config)
        config.update(**self.decoding(), pad_token_id=tokenizer.pad_token_id)
        if config.eos_token_id is None:
            config.eos_token_id = tokenizer.eos_token_id
        return config

    def decoding(self) -> dict[str, Any]:
        """The generation config's decoding fields: greedy, or plain sampling at the temperature (no
        top-p or top-k cut, which the spec's decoding does not name)."""
        sampled = self.sampling is not None
        return {"max_new_tokens": self.max_new_tokens, "do_sample": sampled, "num_beams": 1,
                "temperature": self.sampling.temperature if sampled else None, "top_p": None, "top_k": None,
                "stop_strings": None}

    def batch_seed(self, batch: Sequence[PromptItem]) -> int | None:
        """The seed torch draws one sampled batch with (None when greedy)."""
        if self.sampling is None:
            return None
        return self.sampling.item_seed("\n".join(item.instance_id for item in batch))

    def _generate_batch(self, batch: Sequence[PromptItem]) -> list[Generation]:
        import torch

        assert self._loaded is not None
        model, tokenizer, config = self._loaded
        texts = [
            tokenizer.apply_chat_template(
                [{"role": "user", "content": item.prompt}],
                tokenize=False,
                add_generation_prompt=True,
                **self.chat_template_kwargs,
            )
            for item in batch
        ]
        # The chat template already holds any BOS token; adding special tokens again would double it.
        encoded = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        if (seed := self.batch_seed(batch)) is not None:
            torch.manual_seed(seed)
        with torch.inference_mode():
            output = model.generate(**encoded, generation_config=config)
        new_tokens = output[:, encoded["input_ids"].shape[1] :].tolist()
        prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()
        eos_ids = _as_set(config.eos_token_id)
        generations = []
        for item, tokens, prompt_len in zip(batch, new_tokens, prompt_lengths):
            n = _completion_length(tokens, eos_ids)
            generations.append(
                Generation(
                    instance_id=item.instance_id,
                    output=tokenizer.decode(tokens[:n], skip_special_tokens=True),
                    prompt_tokens=int(prompt_len),
                    completion_tokens=n,
                )
            )
        return generations


def _as_set(token_ids: int | list[int] | None) -> set[int]:
    if token_ids is None:
        return set()
    if isinstance(token_ids, int):
        return {token_ids}
    return set(token_ids)


def _completion_length(tokens: list[int], eos_ids: set[int]) -> int:
    """Generated tokens up to and including the first end-of-sequence token; what follows it in a
    batch is padding, not output."""
    for i, token in enumerate(tokens):
        if token in eos_ids:
            return i + 1
    return len(tokens)
