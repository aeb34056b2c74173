"""dagster-celery for real: the evaluation jobs of pipelines/dagster/celery_jobs.py on two separate
worker processes (queues `predict` and `score`) with a Redis broker, a Postgres instance, and one data
directory shared by all. The run's event log shows each worker executing its steps, and the result
equals the embedded default's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.paths import REPO
from support.processes import stop_group
from tests.e2e.test_deploy_postgres import deploy_home, results

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
PARTITION = "vitaldb-ioh@0|medbench/neg-last-map"
WORKER_BOOT_TIMEOUT = 120


def _run(cmd: list[str], env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def test_evaluation_steps_run_on_two_celery_workers(postgres, redis, tmp_path, demo_data, monkeypatch):
    pg = postgres.create_db("medbench_celery")
    home, env = deploy_home(tmp_path / "dagster-home", pg)
    data = tmp_path / "data"
    env = {**os.environ, **env, "MEDBENCH_DATA": str(data), "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "MEDBENCH_CELERY_BROKER": redis.url, "MEDBENCH_CELERY_BACKEND": redis.url}
    # The data directory's kind and the evaluation partitions, as `medbench materialize` records them.
    _run([sys.executable, "-c",
          "import dagster as dg\nfrom medbench.layout import DataDir\nfrom pipelines.engine.specs import load_specs\n"
          "from medbench.registry import installed_plugins\n"
          "from pipelines.dagster.partitions import sync_evaluation_partitions\nDataDir().claim('demo')\n"
          "with dg.DagsterInstance.get() as i: sync_evaluation_partitions(i, load_specs(None, installed_plugins()))"], env)

    workers, logs = [], []
    try:
        for queue in ("predict", "score"):
            log = open(tmp_path / f"worker-{queue}.log", "w")
            logs.append(log)
            workers.append(subprocess.Popen(
                [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
                 "-y", str(REPO / "deploy" / "celery-worker.yaml"), "-q", queue, "-n", f"medbench-{queue}",
                 "--", "--concurrency=1", "--pool=prefork"],
                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        _wait_for_workers(env, workers, tmp_path)
        module = ["-m", "pipelines.dagster.celery_jobs", "-a", "defs"]
        _run([str(BIN / "dagster"), "job", "execute", *module, "-j", "celery_inputs"], env, timeout=900)
        _run([str(BIN / "dagster"), "job", "execute", *module, "-j", "celery_evaluate_vitaldb_ioh",
              "--tags", json.dumps({"dagster/partition": PARTITION})], env, timeout=900)
    finally:
        for w in workers:
            stop_group(w)
        for log in logs:
            log.close()

    for key, value in env.items():
        if key.startswith("MEDBENCH_PG_") or key == "DAGSTER_HOME":
            monkeypatch.setenv(key, value)
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        records = instance.get_run_records(dg.RunsFilter(job_name="celery_evaluate_vitaldb_ioh"))
        assert len(records) == 1 and records[0].dagster_run.status == dg.DagsterRunStatus.SUCCESS
        events = instance.all_logs(records[0].dagster_run.run_id)
        inputs_run = instance.get_run_records(dg.RunsFilter(job_name="celery_inputs"))[0].dagster_run
        input_events = instance.all_logs(inputs_run.run_id)
        assert inputs_run.status == dg.DagsterRunStatus.SUCCESS

    def worker_by_step(evs) -> dict[str, str]:
        out = {}
        for e in evs:
            de = e.dagster_event
            if de and de.is_engine_event and e.step_key and de.engine_event_data:
                md = de.engine_event_data.metadata or {}
                if "Celery worker" in md:
                    out[e.step_key] = md["Celery worker"].value
        return out

    def pid_by_step(evs) -> dict[str, int]:
        return {e.step_key: e.dagster_event.pid for e in evs if e.dagster_event and e.dagster_event.is_step_start}

    by_step = worker_by_step(events)
    print("evaluation steps by worker:", by_step, "pids:", pid_by_step(events))
    print("input steps by worker:", worker_by_step(input_events))
    assert by_step["vitaldb_ioh_predictions"].startswith("medbench-predict@")
    assert by_step["vitaldb_ioh_metrics"].startswith("medbench-score@")
    pids = pid_by_step(events)
    assert pids["vitaldb_ioh_predictions"] != pids["vitaldb_ioh_metrics"]
    assert {w.split("@")[0] for w in worker_by_step(input_events).values()} == {"medbench-score"}
    worker_pids = {w.pid for w in workers}
    assert not set(pids.values()) & (worker_pids | {os.getpid()})  # steps ran in the workers' children

    # The same result as the embedded default's evaluation of that partition, in the shared data directory.
    mine = {r[0] for r in _result_rows(data)}
    theirs = [r for r in results(demo_data) if r[0] in mine]
    assert len(mine) == 1 and theirs and _result_rows(data) == theirs


def _result_rows(data: Path) -> list[tuple]:
    rows = []
    for result in sorted((data / "artifacts").glob("*/result.json")):
        record = json.loads(result.read_text())
        for m in record["metrics"]:
            rows.append((record["run_id"], m["name"], m["value"], m["ci_low"], m["ci_high"]))
    return sorted(rows)


def _wait_for_workers(env: dict, workers: list[subprocess.Popen], tmp_path: Path) -> None:
    """Both workers answer a Celery ping on the broker."""
    deadline = time.monotonic() + WORKER_BOOT_TIMEOUT
    script = ("from celery import Celery\nimport os, json\napp = Celery(broker=os.environ['MEDBENCH_CELERY_BROKER'], "
              "backend=os.environ['MEDBENCH_CELERY_BACKEND'])\n"
              "print(json.dumps(sorted(k for r in (app.control.ping(timeout=2) or []) for k in r)))")
    while time.monotonic() < deadline:
        for w in workers:
            if w.poll() is not None:
                pytest.fail(f"a celery worker exited {w.returncode}:\n" + "\n".join(
                    p.read_text()[-3000:] for p in tmp_path.glob("worker-*.log")), pytrace=False)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
        names = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 and out.stdout.strip() else []
        if {n.split("@")[0] for n in names} >= {"medbench-predict", "medbench-score"}:
            return
        time.sleep(1)
    pytest.fail("celery workers did not answer a ping:\n" + "\n".join(
        p.read_text()[-3000:] for p in tmp_path.glob("worker-*.log")), pytrace=False)
