"""How fast ``medbench materialize`` decides and launches: first pass, all-reused pass, --jobs 1 vs 4.

``python -m bench.orchestration [--n 1000] [--io-evals 32] [--io-items 50] [--tiny]`` writes N
rule-model specs of a tiny generated task (``bench/_bench_family.py``) into a scratch specs
directory (MEDBENCH_SPECS) and a scratch data directory, and prints, side by side: the first
materialization (per evaluation), the second where every result exists (per partition: rule one
without a run), and the I/O-bound set (an OpenAI-compatible loopback server answering each item
after 100 ms) at ``--jobs 1`` and ``--jobs 4``. Targets: reused pass < 10 s at N = 1,000; --jobs 4
>= 3x faster than --jobs 1. It calls the code path of ``medbench materialize`` in-process
(``materialize_selection``), because the family is registered at runtime.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

from bench import _bench_family as fam
from bench._chat_server import LoopbackChatServer, Reply


def _materialize(specs: Path, data: Path, jobs: int, quiet: bool = True):
    from pipelines.dagster.orchestrate import materialize_selection
    from medbench.layout import DataDir

    os.environ.update(MEDBENCH_SPECS=str(specs), MEDBENCH_DATA=str(data), DAGSTER_HOME=str(data / "dagster"))
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out) if quiet else contextlib.nullcontext():
        report = materialize_selection(demo=True, data=DataDir(data), jobs=jobs, pools=[f"cpu={jobs}", f"api={jobs}"])
    seconds = time.perf_counter() - start
    if not report.ok:
        raise SystemExit(f"materialization failed:\n{report.render()}")
    statuses = [o.status for o in report.outcomes]
    return seconds, statuses


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="rule-model evaluations (first and reused pass)")
    ap.add_argument("--items", type=int, default=50, help="items per evaluation")
    ap.add_argument("--jobs", type=int, default=4, help="--jobs of the first pass")
    ap.add_argument("--io-evals", type=int, default=32)
    ap.add_argument("--io-items", type=int, default=50)
    ap.add_argument("--io-delay", type=float, default=0.1, help="seconds the loopback server waits per reply")
    ap.add_argument("--tiny", action="store_true", help="a CI-sized run (no targets checked)")
    args = ap.parse_args(argv)
    if args.tiny:
        args.n, args.items, args.io_evals, args.io_items = 6, 10, 4, 5
    with fam.register(), tempfile.TemporaryDirectory(prefix="medbench-bench-") as tmp:
        root = Path(tmp)
        specs = fam.write_specs(root / "specs", args.items, args.n)
        first, st1 = _materialize(specs, root / "data", args.jobs)
        print(f"first pass   N={args.n:5d} evaluations x {args.items} items, --jobs {args.jobs}: {first:8.1f} s "
              f"({first / args.n:.3f} s per evaluation; {st1.count('ran')} ran)", flush=True)
        again, st2 = _materialize(specs, root / "data", args.jobs)
        print(f"reused pass  N={args.n:5d} evaluations: {again:8.2f} s ({1000 * again / args.n:.1f} ms per partition; "
              f"{st2.count('reused')} reused)  target < 10 s at N=1000", flush=True)
        with LoopbackChatServer(lambda iid, attempt: Reply(delay_s=args.io_delay)) as server:
            io_specs = fam.write_specs(root / "io-specs", args.io_items, args.io_evals, base_url=server.base_url)
            t1, _ = _materialize(io_specs, root / "io-1", 1)
            t4, _ = _materialize(io_specs, root / "io-4", 4)
        print(f"I/O-bound    {args.io_evals} evaluations x {args.io_items} items, {1000 * args.io_delay:.0f} ms replies: "
              f"--jobs 1 {t1:.1f} s, --jobs 4 {t4:.1f} s ({t1 / t4:.2f}x)  target >= 3x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
