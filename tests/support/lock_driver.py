"""One evaluation (predictions, then metrics) of a partition through the engine, as its own process.

For the two-at-once test: the model is made slow (it sleeps before generating) so that two
processes started together overlap, and every item handed to the model is recorded (fsynced) in
a calls file, so the test can count how many generations were paid for.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--calls", required=True)
    parser.add_argument("--delay", type=float, default=2.0)
    parser.add_argument("--start-at", type=float, default=0.0, help="time.time() to start at (a barrier)")
    args = parser.parse_args(argv)

    from pipelines.backends.registry import BUILTIN_BACKENDS
    from pipelines.engine.evaluate import compute_metrics, make_predictions, resolve_evaluation
    from support.plugins import specs as load_specs
    from medbench.layout import DataDir

    class Slow:
        def __init__(self, inner):
            self.inner = inner

        def generate(self, items, store, log):
            todo = [i for i in items if i.instance_id not in store.load()]
            with open(args.calls, "a") as fh:
                fh.write("".join(f"{i.instance_id}\n" for i in todo))
                fh.flush()
                os.fsync(fh.fileno())
            time.sleep(args.delay)
            return self.inner.generate(items, store, log)

    def slowed(real):
        return lambda self, *a, **k: Slow(real(self, *a, **k))

    for backend in BUILTIN_BACKENDS:  # whichever backend the model has, its generator is slowed
        backend.text_generator = slowed(backend.text_generator)
    data = DataDir(Path(args.data))
    specs = load_specs()
    ev = resolve_evaluation(specs, data, args.task, args.model)
    time.sleep(max(0.0, args.start_at - time.time()))
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        print(line, flush=True)

    make_predictions(ev, data, log)
    record = compute_metrics(ev, specs, data, log)
    print(json.dumps({"run_id": ev.run_id, "created_at": record.created_at.isoformat(),
                      "waited": any("waiting for it" in line for line in lines)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
