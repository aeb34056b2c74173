"""Embedded scale-out pieces: pool limits, bounded launching, pools per backend, one-line causes."""

import threading
import time
from types import SimpleNamespace

import dagster as dg

from pipelines.dagster.launch import PartitionBusy, partition_lock, run_bounded
from pipelines.dagster.limits import Limits, limits_of, with_overrides
from pipelines.orchestration.plan import Planned
from pipelines.orchestration.report import Outcome, root_cause


def planned(key: str, pool: str) -> Planned:
    return Planned(key, None, None, "run", run_id=key, pool=pool)


def test_a_pool_limited_to_one_never_overlaps():
    spans, lock = {}, threading.Lock()

    def launch(p, token):
        start = time.monotonic()
        time.sleep(0.05)
        with lock:
            spans.setdefault(p.pool, []).append((start, time.monotonic()))
        return Outcome(p.partition, "ran", p.run_id)

    work = [planned(f"g{i}", "gpu") for i in range(4)] + [planned(f"a{i}", "api") for i in range(4)]
    outcomes, interrupted = run_bounded(work, 8, Limits(8, {"gpu": 1, "api": 4}), launch, log=lambda m: None)
    assert not interrupted and sorted(o.partition for o in outcomes) == sorted(p.partition for p in work)
    gpu = sorted(spans["gpu"])
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(gpu, gpu[1:]))
    api = spans["api"]
    assert max(s for s, _ in api) < min(e for _, e in api)  # the api runs did overlap


def test_jobs_bound_all_pools_together():
    live, peak, lock = [0], [0], threading.Lock()

    def launch(p, token):
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        time.sleep(0.03)
        with lock:
            live[0] -= 1
        return Outcome(p.partition, "ran")

    run_bounded([planned(f"k{i}", "api") for i in range(10)], 3, Limits(10, {}), launch, log=lambda m: None)
    assert peak[0] == 3


def test_limits_come_from_dagster_yaml(tmp_path):
    from pipelines.dagster.orchestrate import REPO_ROOT

    (tmp_path / "dagster.yaml").write_text((REPO_ROOT / "dagster.yaml").read_text())
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        limits = limits_of(instance)
    assert limits.max_runs == 4 and limits.of("gpu") == 1 and limits.of("api") == 4 and limits.of("cpu") == 2
    assert with_overrides(limits, ["gpu=2"]).of("gpu") == 2


def test_partition_lock_is_exclusive(tmp_path):
    with partition_lock(tmp_path, "t@0|m"):
        try:
            with partition_lock(tmp_path, "t@0|m"):
                raise AssertionError("second lock acquired")
        except PartitionBusy:
            pass
    with partition_lock(tmp_path, "t@0|m"):
        pass


def test_pool_of_backends():
    from pipelines.backends.pools import pool_of

    m = lambda backend, **s: SimpleNamespace(backend=backend, settings=SimpleNamespace(**s))  # noqa: E731
    assert pool_of(m("openai")) == "api" and pool_of(m("vllm")) == "gpu" and pool_of(m("rule")) == "cpu"
    assert pool_of(m("transformers", device="cuda:0")) == "gpu" and pool_of(m("transformers", device="cpu")) == "cpu"


def test_root_cause_walks_the_cause_chain():
    inner = SimpleNamespace(message="ValueError: out2.jsonl line 5: not valid JSON\n", cls_name="ValueError",
                            cause=None)
    outer = SimpleNamespace(message='DagsterExecutionStepExecutionError: Error occurred while executing op "p":\n',
                            cls_name="DagsterExecutionStepExecutionError", cause=inner)
    assert root_cause(outer) == "ValueError: out2.jsonl line 5: not valid JSON"
