"""The maintainer's path in the UI over finished work: a backfill vs ``evaluate_all`` vs the CLI.

``python -m bench.ui_backfill [--extra 16] [--tiny]`` copies the specs with ``--extra`` more rule
models on vitaldb-ioh@0 (copies of ``medbench/neg-last-map``) into a scratch specs directory,
materialises the vitaldb-ioh demo once with the CLI, then starts ``dagster-daemon`` on that
instance (the checkout's dagster.yaml: queued runs, pool limits) and times, in the same run, over
the same all-reused partitions:

- a job backfill of every ``evaluate_vitaldb_ioh`` partition (``dagster job backfill --all``, what
  the UI's "Launch backfill" submits): one queued run, one run process, per partition;
- one ``evaluate_all`` run (``dagster job launch``): rule one before launching;
- ``medbench materialize --demo --task vitaldb-ioh`` (the CLI).

Each is measured from submission to the last run's end, and every run must succeed.
Target (issue #15): a UI backfill over reused partitions costs about a second per partition at most.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._measure import REPO_ROOT, child_env

BIN = Path(sys.executable).parent
TEMPLATE = REPO_ROOT / "specs" / "models" / "medbench" / "neg-last-map.toml"


def write_specs(root: Path, extra: int) -> Path:
    shutil.copytree(REPO_ROOT / "specs", root)
    folder = root / "models" / "benchui"
    folder.mkdir()
    text = TEMPLATE.read_text()
    for i in range(extra):
        name = f"neg-last-map-{i:03d}"
        (folder / f"{name}.toml").write_text(
            text.replace('slug = "medbench/neg-last-map"', f'slug = "benchui/{name}"')
                .replace('provider = "medbench"', 'provider = "benchui"')
                .replace('provider_model_id = "neg-last-map"', f'provider_model_id = "{name}"'))
    return root


def _runs(home: Path):
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        return list(instance.get_run_records())


def _wait(home: Path, done, daemon: subprocess.Popen, timeout: float = 1800):
    """Poll the run records until ``done(records)`` holds; returns them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise SystemExit(f"dagster-daemon exited {daemon.returncode}")
        records = _runs(home)
        if done(records):
            return records
        time.sleep(0.5)
    raise SystemExit(f"runs did not finish within {timeout:.0f} s")


def _check(records, what: str) -> None:
    bad = [(r.dagster_run.job_name, r.dagster_run.status.value) for r in records if r.dagster_run.status.value != "SUCCESS"]
    if bad:
        raise SystemExit(f"{what}: runs did not succeed: {bad}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--extra", type=int, default=16, help="extra rule models on vitaldb-ioh@0")
    ap.add_argument("--tiny", action="store_true", help="a CI-sized run (2 extra models)")
    args = ap.parse_args(argv)
    extra = 2 if args.tiny else args.extra
    with tempfile.TemporaryDirectory(prefix="medbench-uibench-") as tmp:
        root = Path(tmp)
        specs, data, home = write_specs(root / "specs", extra), root / "data", root / "data" / "dagster"
        env = child_env({"MEDBENCH_SPECS": str(specs), "MEDBENCH_DATA": str(data), "DAGSTER_HOME": str(home),
                         "PYTHONUNBUFFERED": "1"})

        def cli() -> float:
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "materialize", "--demo", "--task",
                                   "vitaldb-ioh"], cwd=REPO_ROOT, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"medbench materialize failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
            return time.perf_counter() - start

        first = cli()
        n = 4 + extra
        print(f"setup: {n} vitaldb-ioh@0 evaluations materialised by the CLI in {first:.1f} s", flush=True)
        log = open(root / "daemon.log", "w")
        daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"], cwd=REPO_ROOT,
                                  env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            known = len(_runs(home))
            start = time.time()
            subprocess.run([str(BIN / "dagster"), "job", "backfill", "-w", "workspace.yaml", "-j",
                            "evaluate_vitaldb_ioh", "--all", "--noprompt"], cwd=REPO_ROOT, env=env, check=True,
                           capture_output=True)
            records = _wait(home, lambda rs: len(rs) >= known + n and all(r.dagster_run.is_finished for r in rs),
                            daemon)
            backfill = max(r.end_time for r in records) - start
            _check(records[: len(records) - known], "backfill")
            known = len(records)
            start = time.time()
            subprocess.run([str(BIN / "dagster"), "job", "launch", "-w", "workspace.yaml", "-j", "evaluate_all",
                            "--config-json", '{"ops": {"evaluate_selection": {"config": {"tasks": ["vitaldb-ioh"]}}}}'],
                           cwd=REPO_ROOT, env=env, check=True, capture_output=True)
            records = _wait(home, lambda rs: len(rs) > known and all(r.dagster_run.is_finished for r in rs), daemon)
            launched = max(r.end_time for r in records) - start
            _check(records[: len(records) - known], "evaluate_all")
        finally:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(daemon.pid, sig)
                    daemon.wait(15)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    continue
            log.close()
        again = cli()
    print(f"UI backfill   {n} reused partitions: {backfill:6.1f} s ({backfill / n:.2f} s per partition, "
          f"{n} runs)  target about 1 s per partition", flush=True)
    print(f"evaluate_all  {n} reused partitions: {launched:6.1f} s ({launched / n:.2f} s per partition, 1 run)",
          flush=True)
    print(f"medbench materialize (CLI), same partitions: {again:.1f} s", flush=True)
    print(f"backfill / evaluate_all: {backfill / launched:.2f}x ; evaluate_all / CLI: {launched / again:.2f}x",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
