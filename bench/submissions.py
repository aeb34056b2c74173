"""Benchmark: N submissions from 10 tokens at once against ``medbench serve --workers 2``, then every
submission approved by two racing maintainers: no duplicate submission, no lost or doubled state
transition, every quota exact.

Each of the 10 owners (one token each) sends ``N/10`` submissions, all in flight together with the
other owners': three in four name a new model, one in four repeats an earlier body of the same
owner (dedupe must return the first, charging nothing). Each owner's quota is half of its distinct
models, so the quota is reached under contention (rate limits are raised for the run, in the data
directory's ``submissions.toml``). Then every accepted submission is approved twice at once
(threads on the store): exactly one approval may win. The alternative it is measured against is the
same requests sent one at a time: the ratio shows what concurrency buys, and the checks show it
costs no correctness.

    python -m bench.submissions [--submissions 1000] [--smoke]

Its file name is shared on purpose: each benchmark is named after what it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bench._servers import Running, free_port, running
from medbench.layout import DataDir
from medbench.submissions import IllegalTransition, SubmissionStore

OWNERS = 10
IN_FLIGHT = 64
REV = "0123456789abcdef0123456789abcdef01234567"


def submission(owner: str, i: int) -> dict:
    model = {"slug": f"{owner}/m{i}", "name": f"M{i}", "type": "llm", "provider_model_id": f"{owner}-m{i}",
             "revision": REV, "backend": "transformers", "settings": {"model": f"{owner}/m{i}"}}
    return {"model": model, "tasks": ["clinicalqa@0"]}


def plan(total: int) -> tuple[dict[str, list[dict]], int]:
    """owner -> bodies (every fourth repeats an earlier one), and each owner's quota."""
    per_owner = total // OWNERS
    distinct = per_owner - per_owner // 4
    bodies = {}
    for k in range(OWNERS):
        owner = f"owner{k}"
        mine = [submission(owner, i) for i in range(distinct)]
        bodies[owner] = mine + [mine[j * 3 % distinct] for j in range(per_owner - distinct)]
    return bodies, max(1, distinct // 2)


@contextlib.contextmanager
def server(data: Path, log: Path) -> Iterator[Running]:
    port = free_port()
    command = [sys.executable, "-m", "pipelines.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port),
               "--workers", "2"]
    with running(command, port, "/v1/submissions", log, env={"MEDBENCH_DATA": str(data)}) as up:
        yield up


async def send_all(base: str, work: list[tuple[str, dict]], concurrency: int) -> list[tuple[str, int, str | None]]:
    """(owner, status, submission id) per request, ``concurrency`` in flight."""
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        async def one(secret_owner: tuple[str, str], body: dict) -> tuple[str, int, str | None]:
            secret, owner = secret_owner
            async with gate:
                answer = await client.post("/v1/submissions", json=body, headers={"authorization": f"Bearer {secret}"})
            return owner, answer.status_code, answer.json().get("id")

        return await asyncio.gather(*(one(key, body) for key, body in work))


def check(store: SubmissionStore, answers: list[tuple[str, int, str | None]], quota: int) -> list[str]:
    problems = []
    unexpected = Counter(status for _, status, _ in answers if status not in (200, 201, 429))
    if unexpected:
        problems.append(f"unexpected statuses {dict(unexpected)}")
    page, total = store.list(limit=100_000)
    keys = Counter((s.model_spec_hash, tuple(s.tasks), s.tier) for s in page)
    doubled = [k for k, n in keys.items() if n > 1]
    if doubled:
        problems.append(f"{len(doubled)} requests stored twice")
    per_owner = Counter(s.owner for s in page)
    wrong = {o: n for o, n in per_owner.items() if n != quota}
    if wrong or len(per_owner) != OWNERS:
        problems.append(f"quota {quota} not exact: {dict(per_owner)}")
    created = {sid for _, status, sid in answers if status == 201}
    if created != {s.id for s in page}:
        problems.append(f"{len(created)} answered 201 but {total} stored")
    return problems


def approve_twice(store: SubmissionStore) -> list[str]:
    page, _ = store.list(limit=100_000)

    def approve(sid: str) -> int:
        try:
            store.transition(sid, "queued", "approved (bench)")
            return 1
        except IllegalTransition:
            return 0

    with ThreadPoolExecutor(8) as pool:
        wins = list(pool.map(approve, [s.id for s in page for _ in range(2)]))
    problems = []
    if sum(wins) != len(page):
        problems.append(f"{sum(wins)} approvals won for {len(page)} submissions")
    for s in store.list(limit=100_000)[0]:
        states = [h.state for h in s.history]
        if states != ["received", "validated", "awaiting_approval", "queued"]:
            problems.append(f"{s.id}: history {states}")
            break
    return problems


def run(total: int, work: Path) -> int:
    data = work / "data"
    data.mkdir(parents=True)
    bodies, quota = plan(total)
    (data / "submissions.toml").write_text(f"[limits]\nrate_limit = 1000000\nquota_per_week = {quota}\n")
    store = SubmissionStore.for_data(DataDir(data))
    secrets = {owner: store.tokens.create(owner, ["submit"])[1] for owner in bodies}
    work_items = [((secrets[o], o), body) for i in range(max(map(len, bodies.values())))
                  for o, mine in bodies.items() if i < len(mine) for body in [mine[i]]]
    print(f"submissions: {len(work_items)} requests from {OWNERS} tokens ({len(work_items) // OWNERS} each, a quarter "
          f"repeats), quota {quota} per owner, {IN_FLIGHT} in flight, medbench serve --workers 2", flush=True)
    with server(data, work / "server.log") as up:
        started = time.monotonic()
        answers = asyncio.run(send_all(up.base, work_items, IN_FLIGHT))
        concurrent_s = time.monotonic() - started
    statuses = Counter(status for _, status, _ in answers)
    problems = check(store, answers, quota) + approve_twice(store)
    print(f"answers: {dict(sorted(statuses.items()))}; stored {store.list()[1]}", flush=True)
    print(f"concurrent: {len(answers) / concurrent_s:.0f} requests/s", flush=True)
    # the alternative: the same requests one at a time, on a fresh store
    seq_data = work / "sequential"
    seq_data.mkdir()
    (seq_data / "submissions.toml").write_text((data / "submissions.toml").read_text())
    seq_store = SubmissionStore.for_data(DataDir(seq_data))
    seq_secrets = {owner: seq_store.tokens.create(owner, ["submit"])[1] for owner in bodies}
    seq_items = [((seq_secrets[o], o), body) for (_, o), body in work_items]
    with server(seq_data, work / "sequential.log") as up:
        started = time.monotonic()
        asyncio.run(send_all(up.base, seq_items, 1))
        sequential_s = time.monotonic() - started
    print(f"one at a time: {len(seq_items) / sequential_s:.0f} requests/s; concurrent vs one at a time: "
          f"{sequential_s / concurrent_s:.2f}x", flush=True)
    print("checks: " + ("no duplicate submission, no lost or doubled transition, every quota exact" if not problems
                        else "FAILED: " + "; ".join(problems)), flush=True)
    store.close()
    seq_store.close()
    return 0 if not problems else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help="80 submissions (CI)")
    args = parser.parse_args(argv)
    total = 80 if args.smoke else args.submissions
    with tempfile.TemporaryDirectory(prefix="bench-submissions-") as scratch:
        return run(total, Path(scratch))


if __name__ == "__main__":
    sys.exit(main())
