"""Benchmark: medbench's transformers backend against lm-evaluation-harness's ``hf`` model.

lm-evaluation-harness is what a researcher would otherwise run to get a model's answers to a
generation task, so it is the peer to beat: the same model, on the same items, with the same
decoding, must come out of medbench at least as fast. Both sides get

- the same model folder (``builtin:tiny-llama`` is built once and loaded by path, float32, CPU),
- the same prompts: the first ``--n`` demo ClinicalQA rows through the task's real template
  (``bench.llm_throughput.demo_items``), given to lm-eval as a ``generate_until`` task whose
  ``doc_to_text`` is that prompt, with ``apply_chat_template`` on, which renders the one user
  message through the tokenizer's chat template exactly as our backend does (checked: the
  contexts lm-eval logs must equal ours),
- the same decoding: greedy, ``--max-new-tokens``, no stop sequence but end-of-sequence (lm-eval
  always adds the EOS string to ``until``; our backend stops at the EOS token),
- the same batch size and the same torch CPU threads (one process, ``--threads`` for both).

What is timed: ``TransformersGenerator.generate`` into a fresh GenerationStore (templating,
tokenising, batching and the durable checkpoint after each batch: everything a real run does),
and ``lm_eval.evaluator.evaluate`` on the already-loaded ``HFLM`` with ``log_samples`` (request
building, batching, generation, the bypass metric). Model loading and lm-eval's dataset loading
are left out (they are built before the clock starts; one warm-up call each), the two alternate
``--repeats`` times and the median is reported. The generations must be identical item by item;
the bench exits 1 and names the first item that differs otherwise. Run:

    python -m bench.vs_lm_eval                       # 200 items, 16 new tokens, batch 16
    python -m bench.vs_lm_eval --n 4 --max-new-tokens 8 --repeats 1   # the CI size
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.llm_throughput import demo_items, quiet
from pipelines.backends.base import PromptItem
from pipelines.backends.tiny_llm import TINY_LLAMA, resolve_model_path

TASK_NAME = "medbench_clinicalqa_demo"
INSTALL_HINT = "lm-evaluation-harness is not installed: pip install -e '.[test,transformers]' (it pins lm-eval[hf])"


def task_config(items_file: Path, max_new_tokens: int) -> dict:
    """The lm-eval task: one row per item, its context the prompt we send, greedy decoding to EOS.

    ``doc_to_text`` names a column, so the prompt is passed through as is (a Jinja template would
    drop a trailing newline); ``until: []`` leaves EOS as the only stop (lm-eval appends it)."""
    return {
        "task": TASK_NAME,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(items_file)}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "prompt",
        "doc_to_target": "instance_id",
        "num_fewshot": 0,
        "generation_kwargs": {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": max_new_tokens},
        "metric_list": [{"metric": "bypass", "aggregation": "bypass", "higher_is_better": True}],
    }


def write_task(workdir: Path, items: list[PromptItem], max_new_tokens: int) -> Path:
    """The items as JSON lines and the task YAML (JSON is YAML) in ``workdir/tasks``; returns that folder."""
    items_file = workdir / "items.jsonl"
    with items_file.open("w", encoding="utf-8") as out:
        for item in items:
            out.write(json.dumps({"instance_id": item.instance_id, "prompt": item.prompt}, ensure_ascii=False) + "\n")
    task_dir = workdir / "tasks"
    task_dir.mkdir(exist_ok=True)
    (task_dir / f"{TASK_NAME}.yaml").write_text(json.dumps(task_config(items_file, max_new_tokens), indent=1))
    return task_dir


def first_difference(ours: dict[str, str], theirs: dict[str, str], order: list[str]) -> str | None:
    """None when both hold the same text for every id in ``order``, else one line naming the first
    item that differs (or is missing on one side) and both texts."""
    for position, instance_id in enumerate(order):
        a, b = ours.get(instance_id), theirs.get(instance_id)
        if a is None or b is None or a != b:
            return f"item {position} ({instance_id}): medbench {a!r} vs lm-eval {b!r}"
    return None


def count_identical(ours: dict[str, str], theirs: dict[str, str], order: list[str]) -> int:
    return sum(1 for i in order if i in ours and i in theirs and ours[i] == theirs[i])


class Clock:
    """Wall and CPU seconds of a block. The machine the figures come from is shared, so wall time
    swings with the neighbours' load; this process's CPU time (one torch thread) swings much less."""

    def __enter__(self) -> Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *_exc) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


class Ours:
    """medbench's TransformersGenerator, loaded by a warm-up call; ``run`` generates into a fresh store."""

    def __init__(self, model: str, args: argparse.Namespace, workdir: Path):
        from pipelines.backends.transformers_backend import TransformersGenerator

        self.workdir = workdir
        self.generator = TransformersGenerator(
            model, args.max_new_tokens, batch_size=args.batch_size, device="cpu", dtype="float32",
            num_threads=args.threads,
        )
        self.runs = 0

    def run(self, items: list[PromptItem]) -> tuple[Clock, dict[str, str]]:
        from pipelines.engine.generations import GenerationStore

        self.runs += 1
        store = GenerationStore(self.workdir / f"ours-{self.runs}.jsonl")
        with Clock() as clock:
            self.generator.generate(items, store, quiet)
        return clock, {g.instance_id: g.output for g in store.load().values()}

    def chat_context(self, prompt: str) -> str:
        """The text our backend hands the tokenizer for one prompt (the model's chat template)."""
        tokenizer = self.generator._loaded[1]
        return tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True,
            **self.generator.chat_template_kwargs,
        )


class Theirs:
    """lm-eval's ``HFLM`` (loaded once) and the task; ``run`` evaluates a freshly loaded task."""

    def __init__(self, model: str, args: argparse.Namespace, task_dir: Path):
        from lm_eval.models.huggingface import HFLM
        from lm_eval.tasks import TaskManager

        self.lm = HFLM(pretrained=model, dtype="float32", device="cpu", batch_size=args.batch_size)
        self.tasks = TaskManager(include_path=str(task_dir), include_defaults=False)
        self.generate_seconds = 0.0
        inner = self.lm.generate_until

        def timed_generate_until(requests, *a, **kw):  # the share of evaluate() spent generating
            began = time.perf_counter()
            try:
                return inner(requests, *a, **{**kw, "disable_tqdm": True})
            finally:
                self.generate_seconds += time.perf_counter() - began

        self.lm.generate_until = timed_generate_until

    def run(self, limit: int | None = None) -> tuple[Clock, dict[str, str], dict[str, str]]:
        """(time taken, generation by id, logged context by id); loading the task's dataset is not timed."""
        from lm_eval import evaluator

        task_dict = self.tasks.load([TASK_NAME])
        self.generate_seconds = 0.0
        with Clock() as clock:
            results = evaluator.evaluate(
                self.lm, task_dict, limit=limit, log_samples=True, apply_chat_template=True,
                bootstrap_iters=0, verbosity="WARNING",
            )
        samples = results["samples"][TASK_NAME]
        outputs = {s["doc"]["instance_id"]: s["resps"][0][0] for s in samples}
        contexts = {s["doc"]["instance_id"]: s["arguments"][0][0] for s in samples}
        return clock, outputs, contexts


def _quiet_libraries(workdir: Path) -> None:
    """No info logs from lm-eval, datasets and transformers in the printed lines (lm-eval's progress
    bar is turned off per call);
    datasets caches the items' JSON in the bench's own folder, not in the user's cache."""
    os.environ["HF_DATASETS_CACHE"] = str(workdir / "hf-datasets")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for name in ("lm_eval", "lm-eval", "datasets", "transformers", "accelerate"):
        logging.getLogger(name).setLevel(logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=TINY_LLAMA, help="local folder, hub id, or builtin:tiny-llama")
    parser.add_argument("--models-dir", default=str(Path(tempfile.gettempdir()) / "medbench-models"))
    parser.add_argument("--n", type=int, default=200, help="demo ClinicalQA items (cycled past 1,045)")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=16, help="the same on both sides")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each side, alternating; the median is shown")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads for both sides (1 is fastest for the tiny model on a few cores)")
    args = parser.parse_args(argv)
    if min(args.n, args.max_new_tokens, args.batch_size, args.repeats, args.threads) < 1:
        print("vs_lm_eval: --n, --max-new-tokens, --batch-size, --repeats and --threads must be >= 1", file=sys.stderr)
        return 2

    workdir = Path(tempfile.mkdtemp(prefix="vs-lm-eval-"))
    try:
        _quiet_libraries(workdir)
        try:
            import lm_eval  # noqa: F401
        except ImportError:
            print(f"vs_lm_eval: {INSTALL_HINT}", file=sys.stderr)
            return 2
        return _compare(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _compare(args: argparse.Namespace, workdir: Path) -> int:
    import torch

    torch.set_num_threads(args.threads)  # lm-eval has no thread setting: one process-wide value for both
    model = resolve_model_path(args.model, Path(args.models_dir))
    items = demo_items(args.n)
    order = [item.instance_id for item in items]

    ours = Ours(model, args, workdir)
    ours.run(items[:1])  # warm-up: loads the model
    theirs = Theirs(model, args, write_task(workdir, items, args.max_new_tokens))
    theirs.run(limit=1)  # warm-up on the first item

    our_times, their_times, their_generate = [], [], []
    identical = len(items)
    for _ in range(args.repeats):
        our_clock, our_out = ours.run(items)
        their_clock, their_out, contexts = theirs.run()
        our_times.append(our_clock)
        their_times.append(their_clock)
        their_generate.append(theirs.generate_seconds)
        identical = min(identical, count_identical(our_out, their_out, order))
        difference = first_difference(our_out, their_out, order)
        if difference is None:
            expected = {item.instance_id: ours.chat_context(item.prompt) for item in items}
            difference = first_difference(expected, contexts, order)
            if difference is not None:
                difference = f"prompt (chat-templated context) of {difference}"
        if difference is not None:
            print(f"generations identical: {identical}/{len(items)}")
            print(f"vs_lm_eval: medbench and lm-eval differ at {difference}", file=sys.stderr)
            return 1

    n = len(items)
    our_wall, their_wall = (statistics.median(c.wall for c in runs) for runs in (our_times, their_times))
    our_cpu, their_cpu = (statistics.median(c.cpu for c in runs) for runs in (our_times, their_times))
    our_rate, their_rate = n / our_wall, n / their_wall
    print(
        f"vs_lm_eval: model={args.model} n={args.n} max_new_tokens={args.max_new_tokens} "
        f"batch_size={args.batch_size} threads={args.threads} repeats={args.repeats} "
        f"hardware={ours.generator.hardware()} lm_eval={_lm_eval_version()}"
    )
    print(f"medbench transformers backend: {n} items in {our_wall:.3f} s wall, {our_cpu:.3f} s CPU (medians of {args.repeats})")
    print(
        f"lm-evaluation-harness hf     : {n} items in {their_wall:.3f} s wall, {their_cpu:.3f} s CPU "
        f"(medians of {args.repeats}; generate_until {statistics.median(their_generate):.3f} s wall of it)"
    )
    print(
        f"medbench transformers backend: {our_rate:.1f} items/s; lm-evaluation-harness hf: {their_rate:.1f} items/s; "
        f"medbench / lm-eval: {our_rate / their_rate:.2f} x"
    )
    paired = sorted(t.wall / o.wall for o, t in zip(our_times, their_times))  # adjacent runs share the load
    print(
        f"paired runs medbench / lm-eval: {paired[0]:.2f}-{paired[-1]:.2f} x wall over {args.repeats}; "
        f"by CPU time {their_cpu / our_cpu:.2f} x"
    )
    print(f"generations identical: {identical}/{len(items)}")
    return 0


def _lm_eval_version() -> str:
    from importlib.metadata import version

    return version("lm-eval")


if __name__ == "__main__":
    sys.exit(main())
