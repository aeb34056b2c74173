"""One generation run into a GenerationStore, as its own process, for the kill-and-resume test.

The test starts this script, SIGKILLs it after some chunks are checkpointed, and starts it again.
Each backend is made deliberately slow so the kill lands mid-run: the openai backend talks to a
loopback server that delays every answer; the transformers backend sleeps before each batch and
first appends the batch's instance ids to a calls file (fsynced), so the test can count how often
every item was handed to the model.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from pipelines.engine.generations import GenerationStore
from pipelines.backends.base import PromptItem


def resume_items(n: int) -> list[PromptItem]:
    return [PromptItem(f"item{i:03d}", f"[id=item{i:03d}] 문제 {i}: 흉통 환자의 진단은? 정답: X") for i in range(n)]


def _transformers_generator(args: argparse.Namespace):
    from pipelines.backends.transformers_backend import TransformersGenerator

    calls = Path(args.calls)

    class RecordingGenerator(TransformersGenerator):
        def _generate_batch(self, batch):
            with calls.open("a") as fh:
                fh.write("".join(f"{item.instance_id}\n" for item in batch))
                fh.flush()
                os.fsync(fh.fileno())
            time.sleep(args.delay)
            return super()._generate_batch(batch)

    return RecordingGenerator(args.model, max_new_tokens=4, batch_size=args.batch_size, num_threads=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("backend", choices=["openai", "transformers"])
    parser.add_argument("--store", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--base-url", help="openai: the loopback server")
    parser.add_argument("--checkpoint-every", type=int, default=4)
    parser.add_argument("--model", help="transformers: the tiny model folder")
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--calls", help="transformers: file that records the ids of every batch")
    parser.add_argument("--delay", type=float, default=0.05, help="transformers: sleep per batch")
    args = parser.parse_args(argv)

    if args.backend == "openai":
        from pipelines.backends.openai_backend import OpenAIChatGenerator

        generator = OpenAIChatGenerator(
            args.base_url, "loopback", 16, concurrency=2, checkpoint_every=args.checkpoint_every
        )
    else:
        generator = _transformers_generator(args)
    usage = generator.generate(
        resume_items(args.n), GenerationStore(Path(args.store)), lambda line: print(line, flush=True)
    )
    print(f"done: {usage}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
