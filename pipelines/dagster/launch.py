"""Bounded, concurrent launching of the partitions that need work, honouring the pool limits.

Why embedded enforcement: without a daemon nobody dequeues a queued run, so ``medbench
materialize`` never submits to a queue it cannot drain. It runs each partition as its own Dagster
run (``dg.materialize`` in a worker thread: visible in the UI with its tags, same assets and
checks as a UI backfill) and admits a run only while its pool has a free slot and fewer than
``jobs`` runs are in flight. The limits are the ones the daemon's queued coordinator applies
(``limits.py``). Threads, not processes: evaluations wait on I/O (API calls) or on native code
(vLLM, torch) and families registered at runtime stay visible. A file lock per partition keeps a
second ``medbench materialize`` from paying for the same evaluation at the same time: it waits
(``MEDBENCH_PARTITION_WAIT_S``, default 600 s), then applies rule one again, so what the other
process made is reused and a partition whose other process died is computed.

Ctrl-C: nothing more is launched, in-flight runs are reported ``interrupted`` and their Dagster
runs marked failed (their checkpoints keep the finished items for the rerun).
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from collections import deque
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from pipelines.dagster.limits import POOL_TAG, Limits
from pipelines.orchestration.plan import Planned
from pipelines.orchestration.report import Outcome

Launch = Callable[[Planned, str], Outcome]  # (partition, launch token) -> outcome
Interrupted = Callable[[list[str]], None]  # launch tokens of the runs in flight
LAUNCH_TAG = "medbench/launch"  # on each run launched here: its launch token (found again on Ctrl-C)


WAIT_ENV = "MEDBENCH_PARTITION_WAIT_S"  # how long a launch waits for another process's run of its partition
DEFAULT_WAIT_S = 600.0


class PartitionBusy(RuntimeError):
    """Another process kept evaluating this partition for longer than this launch would wait."""


def partition_wait_s(given: float | None = None) -> float:
    """``given``, else ``MEDBENCH_PARTITION_WAIT_S``, else 600 s."""
    if given is not None:
        return max(0.0, given)
    raw = os.environ.get(WAIT_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_WAIT_S
    except ValueError:
        raise PartitionBusy(f"{WAIT_ENV}={raw!r} is not a number of seconds; set it to e.g. 600") from None


@contextmanager
def partition_lock(lock_dir: Path, partition: str, wait_s: float = 0.0, log: Callable[[str], None] = print):
    """An exclusive lock on one partition key (released when the holder dies), yielding
    ``locks.Held`` (whether it waited, since when). When another process holds it: say so and for
    whom, wait up to ``wait_s`` seconds, then raise ``PartitionBusy``."""
    from pipelines.dagster.engine_calls import LockTimeout, exclusive

    path = lock_dir / (hashlib.sha256(partition.encode()).hexdigest()[:20] + ".lock")

    def waiting(holder: str) -> None:
        log(f"{partition}: being evaluated by another process ({holder}); waiting up to {wait_s:g} s")

    try:
        with exclusive(path, wait_s, waiting if wait_s > 0 else None) as held:
            yield held
    except LockTimeout as exc:
        raise PartitionBusy(f"{partition} is being evaluated by another process ({exc.holder}), still after "
                            f"{wait_s:g} s; rerun when it has finished, or wait longer ({WAIT_ENV})") from None


Reuse = Callable[[Planned, object], Outcome | None]  # (partition, locks.Held) -> its reuse, if any


def execute_partition(job, p: Planned, token: str, instance, data_root: Path, run_config: dict,
                      tags: dict[str, str], reuse: Reuse | None = None, wait_s: float | None = None,
                      log: Callable[[str], None] = print):
    """``p``'s partition as its own in-process run of ``job`` on ``instance``, under the
    partition's lock, tagged with its pool and launch token; returns Dagster's execution result,
    or what ``reuse`` returns once the lock is held (rule one again: another process may have
    evaluated the partition while this one waited; it returns None when there is nothing to reuse).

    Why one function: ``medbench materialize`` (``orchestrate.py``) and a ranged run with no
    daemon (``assets/ranged.py``) launch the same way, so both lock and tag the same way."""
    with partition_lock(data_root / "locks", p.partition, partition_wait_s(wait_s), log) as held:
        if reuse is not None and (outcome := reuse(p, held)) is not None:
            return outcome
        return job.execute_in_process(partition_key=p.partition, instance=instance, raise_on_error=False,
                                      run_config=run_config, tags={**tags, POOL_TAG: p.pool, LAUNCH_TAG: token})


def fail_in_flight(instance, tokens: list[str], log: Callable[[str], None] = print,
                   why: str = "medbench materialize was stopped (Ctrl-C)") -> None:
    """Ctrl-C: the Dagster runs of the in-flight launches are marked failed, not left STARTED."""
    import dagster as dg

    for token in tokens:
        for run in instance.get_runs(filters=dg.RunsFilter(tags={LAUNCH_TAG: token})):
            if not run.is_finished:
                instance.report_run_failed(run, f"interrupted: {why}")
                log(f"marked run {run.run_id} ({run.tags.get('dagster/partition', '')}) failed: interrupted")


def run_bounded(work: list[Planned], jobs: int, limits: Limits, launch: Launch,
                on_interrupt: Interrupted | None = None, log: Callable[[str], None] = print,
                interrupts: tuple[type[BaseException], ...] = (KeyboardInterrupt,)) -> tuple[list[Outcome], bool]:
    """Run ``launch`` for every item, at most ``jobs`` at once and at most ``limits.of(pool)`` per
    pool; returns the outcomes (in completion order) and whether one of ``interrupts`` (Ctrl-C;
    inside a Dagster run also its termination) stopped it."""
    jobs = max(1, jobs)
    pending = deque(work)
    running: dict[str, Planned] = {}
    per_pool: dict[str, int] = {}
    done: queue.Queue = queue.Queue()
    outcomes: list[Outcome] = []
    counter = 0

    def worker(p: Planned, token: str) -> None:
        try:
            outcome = launch(p, token)
        except PartitionBusy as exc:
            outcome = Outcome(p.partition, "failed", p.run_id, str(exc))
        except BaseException as exc:  # a crash in one worker must not hang the loop
            outcome = Outcome(p.partition, "failed", p.run_id, f"{type(exc).__name__}: {exc}")
        done.put((token, outcome))

    try:
        while pending or running:
            while len(running) < jobs:
                nxt = next((p for p in pending if per_pool.get(p.pool, 0) < limits.of(p.pool)), None)
                if nxt is None:
                    break
                pending.remove(nxt)
                counter += 1
                token = f"{os.getpid()}-{counter}"
                running[token] = nxt
                per_pool[nxt.pool] = per_pool.get(nxt.pool, 0) + 1
                log(f"launching {nxt.partition} (pool {nxt.pool}, {len(running)} in flight)")
                threading.Thread(target=worker, args=(nxt, token), daemon=True, name=f"medbench-{token}").start()
            if not running:  # every pending item's pool has limit 0
                outcomes += [Outcome(p.partition, "skipped", p.run_id, f"pool {p.pool} has limit 0") for p in pending]
                break
            try:
                token, outcome = done.get(timeout=0.2)
            except queue.Empty:
                continue
            p = running.pop(token)
            per_pool[p.pool] -= 1
            outcomes.append(outcome)
    except interrupts:
        log(f"interrupted: stopping; {len(running)} run(s) in flight, {len(pending)} not started")
        if on_interrupt is not None:
            on_interrupt(list(running))
        outcomes += [Outcome(p.partition, "interrupted", p.run_id, "stopped by Ctrl-C while running")
                     for p in running.values()]
        outcomes += [Outcome(p.partition, "interrupted", p.run_id, "not started (Ctrl-C)") for p in pending]
        return outcomes, True
    return outcomes, False
