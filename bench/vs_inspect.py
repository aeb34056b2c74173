"""Benchmark: medbench's rubric judging against Inspect AI's model-graded scoring, and against raw calls.

Inspect AI is what a researcher would otherwise run to grade free-text answers with a judge model,
so it is the peer to beat (issue 44, docs/benchmarks.md). All three sides grade the same stored
answers, with the same judge prompt, through the same endpoint:

- the answers: the demo's simulated free-text answerers' stored outputs
  (``specs/models/medbench-sim-open/outputs/``) to the first ``--items`` demo items of
  ``clinicalqa-open@0``, whose criteria are derived by the task's rubric rule;
- the judge: a loopback OpenAI-compatible endpoint in its own process (``bench._judge_server``, the
  demo's endpoint, model ``judge``: deterministic string matching), asked at temperature 0 with
  ``judge_samples = 1``, one call per answer grading all its criteria, at most ``--concurrency``
  requests in flight on every side;
- medbench: the task's judge resolved for an ``openai`` model spec at that endpoint
  (``resolve_judge``) and ``AnswerAndJudge.grade``, the code path of regrading stored answers
  (render, request with retries, store the replies durably, parse the verdicts), into a fresh data
  directory each time (nothing cached);
- Inspect: a task whose solver puts in the stored answer and whose scorer asks the judge through
  Inspect's ``openai-api`` provider (``bench._inspect_peer``);
- raw: the same requests with bare httpx (post, read the reply's content; nothing else), the
  floor medbench's overhead is measured against.

Printed: the criteria graded per second by each side (medians of ``--repeats`` alternating runs),
the ratio medbench / Inspect (target at least 1.0x), medbench's overhead over raw calls (target
under 10%), and how many met/not-met verdicts agree item by item (target: all). Exit 1 when a
verdict differs (the first difference is named), 2 on bad arguments or Inspect missing. Run:

    python -m bench.vs_inspect              # 200 items x 6 answerers, concurrency 16, 3 repeats
    python -m bench.vs_inspect --tiny       # the CI size: 6 items x 2 answerers, 1 repeat
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import msgspec

from bench._judge_server import REPO, serving

TASK = "clinicalqa-open@0"
ANSWERERS = ("concise", "english", "hedging", "reasoned", "refuser", "shotgun")
JUDGE_SLUG = "bench/loopback-judge"
JUDGE_SPEC = """slug = "{slug}"
name = "Loopback judge (bench/vs_inspect)"
type = "llm"
provider = "bench"
provider_model_id = "loopback-judge"
revision = "1"
description = "The demo's deterministic loopback judge, for bench/vs_inspect."
backend = "openai"
tasks = []

[settings]
base_url = "{base_url}"
model = "judge"
concurrency = {concurrency}

[price]
basis = "free"
"""


def stored_answers(n_items: int, answerers: int) -> tuple[Any, list[dict[str, Any]], dict[str, str]]:
    """The task's settings, the items (one per answer: id ``<answerer>:<item>``) and the answers."""
    from medbench.registry import installed_plugins
    from pipelines.datasets.clinicalqa.demo import demo_clinicalqa_rows
    from pipelines.engine.specs import load_specs
    from pipelines.tasks.clinicalqa_open.family import items_table

    settings = load_specs(None, installed_plugins()).tasks[TASK].settings
    settings = msgspec.structs.replace(settings, judge_samples=1, judge_temperature=0.0)
    rows = items_table(demo_clinicalqa_rows()[:n_items], settings).to_pylist()
    items: list[dict[str, Any]] = []
    answers: dict[str, str] = {}
    for name in ANSWERERS[:answerers]:
        path = REPO / "specs" / "models" / "medbench-sim-open" / "outputs" / f"{name}.jsonl"
        outputs = {r["instance_id"]: r["output"] for r in map(json.loads, path.read_text("utf-8").splitlines())}
        for row in rows:
            iid = f"{name}:{row['instance_id']}"
            items.append({"instance_id": iid, "prompt": row["prompt"], "criteria": row["criteria"]})
            answers[iid] = outputs[row["instance_id"]]
    return settings, items, answers


def medbench_grades(settings: Any, items: list[dict[str, Any]], answers: dict[str, str], base_url: str,
                    concurrency: int, work: Path) -> tuple[float, dict[str, dict[str, bool]]]:
    """medbench's judging of the answers (fresh specs and data directory): seconds, id -> criterion -> met."""
    from medbench.registry import installed_plugins
    from pipelines.engine.specs import load_specs
    from pipelines.tasks.clinicalqa_open.family import resolve_judge
    from pipelines.tasks.clinicalqa_open.judging import AnswerAndJudge
    from medbench.layout import DataDir

    shutil.copytree(REPO / "specs", work / "specs")
    spec_file = work / "specs" / "models" / f"{JUDGE_SLUG}.toml"
    spec_file.parent.mkdir(parents=True, exist_ok=True)
    spec_file.write_text(JUDGE_SPEC.format(slug=JUDGE_SLUG, base_url=base_url, concurrency=concurrency), "utf-8")
    specs = load_specs(work / "specs", installed_plugins())
    spec = specs.models[JUDGE_SLUG]
    ev = SimpleNamespace(task=SimpleNamespace(settings=settings), judge=spec, judge_backend=specs.backend_of(spec),
                         partition_key=f"{TASK}|vs-inspect")
    data = DataDir(work / "data")
    judge = resolve_judge(ev, data)
    problem = AnswerAndJudge(items=items, prompt_hash="vs-inspect", max_new_tokens=settings.max_new_tokens,
                             temperature=0.0, judge_for=lambda d: judge, judge_template=settings.judge_prompt_template,
                             table=lambda *a: None, config={})
    began = time.perf_counter()
    verdicts, _, unread, _ = problem.grade(judge, answers, "vs-inspect-answers", data, lambda m: None)
    seconds = time.perf_counter() - began
    if unread:
        raise RuntimeError(f"medbench could not read {unread} judge replies")
    return seconds, {r["instance_id"]: {c["id"]: verdicts[r["instance_id"]][0][k][0]
                                        for k, c in enumerate(r["criteria"])} for r in items}


def raw_seconds(prompts: list[str], base_url: str, max_tokens: int, concurrency: int) -> float:
    """The same requests with bare httpx: post each, read its reply's content."""

    async def run() -> None:
        semaphore = asyncio.Semaphore(concurrency)
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(timeout=120.0, limits=limits) as client:

            async def one(prompt: str) -> str:
                async with semaphore:
                    r = await client.post(f"{base_url}/chat/completions", json={
                        "model": "judge", "messages": [{"role": "user", "content": prompt}], "temperature": 0,
                        "max_tokens": max_tokens})
                    r.raise_for_status()
                    return r.json()["choices"][0]["message"]["content"]

            await asyncio.gather(*(one(p) for p in prompts))

    began = time.perf_counter()
    asyncio.run(run())
    return time.perf_counter() - began


def first_difference(ours: dict[str, dict[str, bool]], theirs: dict[str, dict[str, bool]]) -> str | None:
    for iid in ours:
        for cid, met in ours[iid].items():
            other = theirs.get(iid, {}).get(cid)
            if other is not met:
                return f"{iid} criterion {cid}: medbench {met} vs inspect {other}"
    return None


def identical(ours: dict[str, dict[str, bool]], theirs: dict[str, dict[str, bool]]) -> int:
    return sum(theirs.get(iid, {}).get(cid) is met for iid in ours for cid, met in ours[iid].items())


def _target(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=200, help="demo items (at most 1045)")
    parser.add_argument("--answerers", type=int, default=len(ANSWERERS), help=f"at most {len(ANSWERERS)}")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight, every side")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="the CI size: 6 items x 2 answerers, 1 repeat")
    args = parser.parse_args(argv)
    if args.tiny:
        args.items, args.answerers, args.repeats = 6, 2, 1
    if not (1 <= args.items <= 1045 and 1 <= args.answerers <= len(ANSWERERS)) or min(args.concurrency, args.repeats) < 1:
        print(f"vs_inspect: --items must be 1..1045, --answerers 1..{len(ANSWERERS)}, --concurrency and --repeats "
              ">= 1", file=sys.stderr)
        return 2
    try:
        import inspect_ai  # noqa: F401
        import openai  # noqa: F401
    except ImportError:
        from bench._inspect_peer import INSTALL_HINT

        print(f"vs_inspect: {INSTALL_HINT}", file=sys.stderr)
        return 2
    from bench._inspect_peer import inspect_grades
    from pipelines.tasks.clinicalqa_open.judging import judge_prompt

    settings, items, answers = stored_answers(args.items, args.answerers)
    criteria = sum(len(r["criteria"]) for r in items)
    prompts = [judge_prompt(settings.judge_prompt_template, r["prompt"], answers[r["instance_id"]], r["criteria"])
               for r in items]
    inspect_rows = [{"id": r["instance_id"], "prompt": r["prompt"], "answer": answers[r["instance_id"]],
                     "criteria": r["criteria"]} for r in items]
    times: dict[str, list[float]] = {"raw": [], "medbench": [], "inspect": []}
    with serving() as base_url, tempfile.TemporaryDirectory(prefix="vs-inspect-") as tmp:
        raw_seconds(prompts[: args.concurrency], base_url, settings.judge_max_new_tokens, args.concurrency)  # warm
        for r in range(args.repeats):
            times["raw"].append(raw_seconds(prompts, base_url, settings.judge_max_new_tokens, args.concurrency))
            seconds, ours = medbench_grades(settings, items, answers, base_url, args.concurrency, Path(tmp) / f"m{r}")
            times["medbench"].append(seconds)
            began = time.perf_counter()
            theirs = inspect_grades(inspect_rows, settings.judge_prompt_template, base_url, "judge",
                                    settings.judge_max_new_tokens, args.concurrency, Path(tmp) / f"i{r}")
            times["inspect"].append(time.perf_counter() - began)
    wall = {side: statistics.median(t) for side, t in times.items()}
    rate = {side: criteria / w for side, w in wall.items()}
    overhead = wall["medbench"] / wall["raw"] - 1.0
    ratio = rate["medbench"] / rate["inspect"]
    same = identical(ours, theirs)
    print(f"judge: the loopback endpoint's deterministic model 'judge' at temperature 0, judge_samples 1, "
          f"concurrency {args.concurrency}")
    print(f"answers: {len(items)} ({args.items} items x {args.answerers} answerers), {criteria} criteria graded "
          f"per pass, medians of {args.repeats}")
    for side, label in (("raw", "raw calls to the endpoint"), ("medbench", "medbench judging"),
                        ("inspect", "inspect model-graded scorer")):
        print(f"{label}: {wall[side]:.3f} s wall, {rate[side]:.1f} criteria/s")
    print(f"medbench / inspect: {ratio:.2f} x criteria/s (target >= 1.0x: {_target(ratio >= 1.0)})")
    print(f"medbench overhead over raw calls: {overhead:+.1%} (target < 10%: {_target(overhead < 0.10)})")
    print(f"met/not-met identical: {same}/{criteria} (target: all: {_target(same == criteria)})")
    if same != criteria:
        print(f"vs_inspect: medbench and inspect differ at {first_difference(ours, theirs)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
