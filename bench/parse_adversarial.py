"""Benchmark: answer parser v3 (rewritten) against the v3 it replaced, on the attack's replies and the demo's.

The v3 it replaced called the frozen v2 and was worse than quadratic on long replies (docs/adding-a-task.md):
``"A " * 8000`` took 7.9 s and 16 KB of ``"정답: A 아니라 B "`` 22 s. The alternative timed here, in the
same run, is that v3 exactly: the frozen copy kept as the test oracle (``tests/support/parser_v3_oracle.py``,
never part of the product). Three measurements, each printing both parsers' times and the ratio:

1. one 16 KB adversarial reply of each family (``tests/support/parser_inputs.py``: the attack's two
   replies, random mixes of every piece a rule reacts to, one endless line, long blank runs);
   target < 20 ms each for the rewrite;
2. 1,045 adversarial replies of 64 KiB (a whole run's outputs at the 64 MiB output cap), the
   families in turn; target < 10 s in all. The old v3 would take hours: its figure is measurement 1
   (one reply per family) scaled linearly to this count and size, a lower bound for a parser worse
   than linear (printed as such). When the rewrite itself passes a time budget, the rest is scaled
   from what it parsed (printed as such);
3. the demo's outputs (every simulated model's reply to every demo item, with option texts):
   the rewrite must be no slower than the old v3 (ratio <= 1.1, for timer noise), and must read
   every one of them the same.

    python -m bench.parse_adversarial [--tiny]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test-only oracle and inputs

from support.parser_inputs import FAMILIES, OPTION_TEXTS, adversarial, demo_replies  # noqa: E402
from support.parser_v3_oracle import parse_answer_v3 as old_v3  # noqa: E402

from pipelines.tasks.clinicalqa.parsing.v3 import parse_answer_v3 as new_v3  # noqa: E402

SCALES = {"tiny": {"one": 2_000, "many": (20, 4_096), "demo": 200, "budget_s": 5.0},
          "full": {"one": 16_000, "many": (1_045, 65_536), "demo": None, "budget_s": 120.0}}
TARGET_ONE_S, TARGET_MANY_S, DEMO_SLACK = 0.020, 10.0, 1.1
OPTIONS = ("A", "B", "C", "D", "E")


def _time(parse, text: str, texts) -> tuple[float, object]:
    start = time.perf_counter()
    result = parse(text, OPTIONS, texts)
    return time.perf_counter() - start, result


def bench_one(size: int) -> tuple[bool, dict[str, float]]:
    print(f"1. one adversarial reply of {size:,} characters per family (target < {TARGET_ONE_S * 1000:.0f} ms, new)")
    ok, old_times = True, {}
    rng = random.Random(35)
    for _, text in adversarial(2 * len(FAMILIES), 300, seed=1):  # compile every pattern of both first
        new_v3(text, OPTIONS, OPTION_TEXTS), old_v3(text, OPTIONS, OPTION_TEXTS)
    for name, make in FAMILIES.items():
        text = make(size, rng)
        new_s, new = _time(new_v3, text, OPTION_TEXTS)
        old_s, old = _time(old_v3, text, OPTION_TEXTS)
        ok, old_times[name] = ok and new == old, old_s
        print(f"   {name:14s} new {new_s * 1000:9.1f} ms   old {old_s * 1000:9.1f} ms   old/new {old_s / new_s:8.1f}x"
              f"   same: {new == old}   under target: {new_s < TARGET_ONE_S}")
    return ok, old_times


def bench_many(count: int, size: int, budget_s: float, old_times: dict[str, float], old_size: int) -> bool:
    print(f"2. {count:,} adversarial replies of {size:,} characters (target < {TARGET_MANY_S:.0f} s in all, new)")
    replies = list(adversarial(count, size))
    start, done = time.perf_counter(), 0
    for _, text in replies:
        new_v3(text, OPTIONS, OPTION_TEXTS)
        done += 1
        if time.perf_counter() - start > budget_s:
            break
    new_s = time.perf_counter() - start
    scaled = "" if done == count else f" (scaled from {done:,} of {count:,} replies in {new_s:.1f} s)"
    new_total = new_s * count / done
    old_total = sum(old_times.values()) / len(old_times) * count * size / old_size
    print(f"   new {new_total:9.1f} s{scaled}   old >= {old_total:9.1f} s (measurement 1 scaled linearly)"
          f"   old/new {old_total / new_total:8.1f}x   under target: {new_total < TARGET_MANY_S}")
    return True


def bench_demo(limit: int | None) -> bool:
    replies = demo_replies()[:limit] if limit else demo_replies()
    print(f"3. the demo's {len(replies):,} outputs, with option texts (new no slower than old x{DEMO_SLACK})")
    start = time.perf_counter()
    new = [new_v3(text, OPTIONS, texts) for text, texts in replies]
    new_s = time.perf_counter() - start
    start = time.perf_counter()
    old = [old_v3(text, OPTIONS, texts) for text, texts in replies]
    old_s = time.perf_counter() - start
    same = new == old
    print(f"   new {new_s:7.2f} s   old {old_s:7.2f} s   old/new {old_s / new_s:5.2f}x   same: {same}"
          f"   no slower: {new_s <= old_s * DEMO_SLACK}")
    return same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small sizes (for CI)")
    args = parser.parse_args(argv)
    scale = SCALES["tiny" if args.tiny else "full"]
    ok, old_times = bench_one(scale["one"])
    ok = bench_many(*scale["many"], scale["budget_s"], old_times, scale["one"]) and ok
    ok = bench_demo(scale["demo"]) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
