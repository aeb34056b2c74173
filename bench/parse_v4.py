"""Benchmark: answer parser v4 against v3 on adversarial replies, and v4 on a 64 MiB batch.

The claim (docs/benchmarks.md, "Answer parser v4"): v4 is near linear in a reply's length, so a
16 KB adversarial reply parses in under 20 ms and 1,045 adversarial replies of 64 KiB (the whole
output cap of a run) in under 10 s. The alternative it is measured against is v3, the parser
clinicalqa@0 used before v4, on the same replies in the same process (v3 was rewritten near linear
too, issue 35: it took seconds on these when it built on v2's entry point, which did work
proportional to the rest of a line for every letter). v3 is timed once per reply; v4 takes the
best of three runs. The replies are the attack's (``"A " * 8000``,
``"정답: A 아니라 B "`` repeated) and similar ones, each repeated to the size in UTF-8 bytes.

    python -m bench.parse_v4 [--tiny] [--skip-v3]
"""

from __future__ import annotations

import argparse
import sys
import time

from pipelines.tasks.clinicalqa.parsing.v3 import parse_answer_v3
from pipelines.tasks.clinicalqa.parsing.v4 import parse_answer_v4

UNITS = ["A ", "정답: A 아니라 B ", "A. ", "(A) ", "답 A ", "A\n", "만약 정답: A ", "The answer is A. ", "A입니다. ",
         "答案是A或B。", "| A | ✅ |\n", "A, "]
TEXTS = {"A": "Ampicillin", "B": "Metformin", "C": "경구 항생제", "D": "수술", "E": "경과 관찰"}
TARGET_ONE_MS, TARGET_BATCH_S = 20.0, 10.0


def repeat_to(unit: str, size: int) -> str:
    """``unit`` repeated to at most ``size`` UTF-8 bytes."""
    return unit * (size // len(unit.encode("utf-8")))


def _time(parse, text: str, runs: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = parse(text, option_texts=TEXTS)
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="2 KB replies and a batch of 20 (CI: keeps it working)")
    parser.add_argument("--skip-v3", action="store_true", help="time v4 only (v3 takes minutes at full size)")
    args = parser.parse_args(argv)
    size, batch, batch_size = (2048, 20, 4096) if args.tiny else (16 * 1024, 1045, 64 * 1024)
    print(f"one reply of {size} bytes: v4 best of 3, v3 once (same process, same replies)")
    print(f"{'reply unit':24s} {'v4 ms':>9s} {'v3 ms':>10s} {'v3/v4':>8s}  same answer")
    worst = 0.0
    for unit in UNITS:
        text = repeat_to(unit, size)
        t4, r4 = _time(parse_answer_v4, text, 3)
        worst = max(worst, t4)
        if args.skip_v3:
            print(f"{unit!r:24s} {t4 * 1e3:9.1f} {'-':>10s} {'-':>8s}  -")
            continue
        t3, r3 = _time(parse_answer_v3, text, 1)
        print(f"{unit!r:24s} {t4 * 1e3:9.1f} {t3 * 1e3:10.1f} {t3 / t4:8.0f}x  {r3 == r4}")
    print(f"worst v4 reply: {worst * 1e3:.1f} ms (target < {TARGET_ONE_MS:.0f} ms at 16 KB)")
    replies = [repeat_to(UNITS[i % len(UNITS)], batch_size) for i in range(batch)]
    start = time.perf_counter()
    for text in replies:
        parse_answer_v4(text, option_texts=TEXTS)
    total = time.perf_counter() - start
    print(f"v4 on {batch} replies of {batch_size} bytes ({sum(len(r.encode()) for r in replies) / 2**20:.1f} MiB): "
          f"{total:.2f} s (target < {TARGET_BATCH_S:.0f} s for 1,045 x 64 KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
