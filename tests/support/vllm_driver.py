"""Runs the vllm backend (offline engine) into a GenerationStore, inside the vllm virtual env.

vLLM lives in its own virtual environment (.venv-vllm, built by .ci/setup-vllm-cpu.sh), so the
test in the main environment starts this script there as a subprocess and reads the store and
the JSON usage line it prints last. The main guard matters: vLLM spawns worker processes that
re-import the main module.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from pipelines.engine.generations import GenerationStore
from pipelines.backends.base import PromptItem
from pipelines.backends.vllm_backend import VllmGenerator


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--items", required=True, help="JSON file: [{instance_id, prompt}, ...]")
    parser.add_argument("--store", required=True)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--chunk-size", type=int, default=256)
    parser.add_argument("--engine", default="{}", help="JSON object of vllm.LLM keyword arguments")
    args = parser.parse_args(argv)

    items = [PromptItem(**row) for row in json.loads(Path(args.items).read_text())]
    generator = VllmGenerator(
        args.model, args.max_new_tokens, chunk_size=args.chunk_size, engine_kwargs=json.loads(args.engine)
    )
    usage = generator.generate(items, GenerationStore(Path(args.store)), lambda line: print(line, flush=True))
    print("USAGE " + json.dumps(dataclasses.asdict(usage)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
