"""The maintainer's path in the UI over finished work: a backfill vs ``evaluate_all`` vs the CLI.

``python -m bench.ui_backfill [--extra 16] [--per-partition K] [--tiny]`` copies the specs with
``--extra`` more rule models on vitaldb-ioh@0 (copies of ``medbench/neg-last-map``) into a scratch
specs directory, materializes the vitaldb-ioh demo once with the CLI, then starts ``dagster-daemon``
on that instance (the checkout's dagster.yaml: queued runs, pool limits) and times, in the same
run, over the same all-reused partitions:

- the UI's backfill of every vitaldb-ioh evaluation partition (the ``launchPartitionBackfill``
  mutation "Materialize all" sends to ``dagster-webserver``): with the single-run backfill policy,
  one ranged run that applies rule one to every partition (``pipelines/dagster/assets/ranged.py``),
  timed until the daemon marks the backfill complete;
- the alternative it replaced, one run per partition: ``dagster job backfill``, which makes a run
  per partition whatever the backfill policy, timed until its last run ends, over all partitions
  or, with ``--per-partition K``, over the first K (its cost is linear: ~4 s a run, so a large N
  need not pay it in full; the ratio is then of per-partition costs);
- one ``evaluate_all`` run (``dagster job launch``): rule one before launching;
- ``medbench materialize --demo --task vitaldb-ioh`` (the CLI).

Every run must succeed. Target (issue #15): a UI backfill over reused
partitions costs about a second per partition at most.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._dagster_ui import BIN, DagsterUI, sync_partitions
from bench._measure import REPO_ROOT, child_env

TEMPLATE = REPO_ROOT / "specs" / "models" / "medbench" / "neg-last-map.toml"
ASSETS = ["vitaldb_ioh_predictions", "vitaldb_ioh_metrics"]


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


def _runs(home: Path, **tags: str) -> list:
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        return list(instance.get_run_records(filters=dg.RunsFilter(tags=tags) if tags else None))


def _wait(home: Path, done, ui: DagsterUI, timeout: float = 1800) -> list:
    """Poll the run records until ``done(records)`` holds; returns them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ui.alive()
        records = _runs(home)
        if done(records):
            return records
        time.sleep(0.5)
    raise SystemExit(f"runs did not finish within {timeout:.0f} s")


def _check(records, what: str) -> None:
    bad = [(r.dagster_run.job_name, r.dagster_run.status.value) for r in records if r.dagster_run.status.value != "SUCCESS"]
    if bad:
        raise SystemExit(f"{what}: runs did not succeed: {bad}")


def _cli(env: dict) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "materialize", "--demo", "--task",
                           "vitaldb-ioh"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"medbench materialize failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def _ranged_backfill(ui: DagsterUI, home: Path) -> tuple[float, list]:
    """Seconds from the launch until the daemon marks the backfill complete, and its runs as
    (created, started, ended) seconds after the launch."""
    start = time.time()
    backfill_id = ui.launch_backfill(ASSETS)
    status = ui.wait_backfill(backfill_id)
    took = time.time() - start
    records = _runs(home, **{"dagster/backfill": backfill_id})
    _check(records, "UI backfill")
    if status != "COMPLETED_SUCCESS":
        raise SystemExit(f"UI backfill ended {status}:\n{ui.log_tail('daemon')}")
    return took, [(r.create_timestamp.timestamp() - start, r.start_time - start, r.end_time - start) for r in records]


def _partition_keys(home: Path) -> list[str]:
    import dagster as dg

    from pipelines.dagster.partitions import partitions_name

    with dg.DagsterInstance.from_config(str(home)) as instance:
        return sorted(instance.get_dynamic_partitions(partitions_name("vitaldb-ioh")))


def _per_partition_backfill(ui: DagsterUI, home: Path, env: dict, n: int) -> float:
    """Seconds until the last of ``n`` runs ends (all partitions, or the first ``n``)."""
    known = {r.dagster_run.run_id for r in _runs(home)}
    keys = _partition_keys(home)
    which = ["--all"] if n >= len(keys) else ["--partitions", ",".join(keys[:n])]
    start = time.time()
    subprocess.run([str(BIN / "dagster"), "job", "backfill", "-w", "workspace.yaml", "-j", "evaluate_vitaldb_ioh",
                    *which, "--noprompt"], cwd=REPO_ROOT, env=env, check=True, capture_output=True)

    def done(records) -> bool:
        new = [r for r in records if r.dagster_run.run_id not in known]
        return len(new) >= n and all(r.dagster_run.is_finished for r in new)

    new = [r for r in _wait(home, done, ui) if r.dagster_run.run_id not in known]
    _check(new, "per-partition backfill")
    return max(r.end_time for r in new) - start


def _evaluate_all(ui: DagsterUI, home: Path, env: dict) -> float:
    known = {r.dagster_run.run_id for r in _runs(home)}
    start = time.time()
    subprocess.run([str(BIN / "dagster"), "job", "launch", "-w", "workspace.yaml", "-j", "evaluate_all",
                    "--config-json", '{"ops": {"evaluate_selection": {"config": {"tasks": ["vitaldb-ioh"]}}}}'],
                   cwd=REPO_ROOT, env=env, check=True, capture_output=True)

    def done(records) -> bool:
        new = [r for r in records if r.dagster_run.run_id not in known]
        return bool(new) and all(r.dagster_run.is_finished for r in new)

    new = [r for r in _wait(home, done, ui) if r.dagster_run.run_id not in known]
    _check(new, "evaluate_all")
    return max(r.end_time for r in new) - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--extra", type=int, default=16, help="extra rule models on vitaldb-ioh@0")
    ap.add_argument("--per-partition", type=int, default=0, metavar="K",
                    help="time the one-run-per-partition alternative on the first K partitions (default: all)")
    ap.add_argument("--tiny", action="store_true", help="a CI-sized run (2 extra models)")
    args = ap.parse_args(argv)
    extra = 2 if args.tiny else args.extra
    with tempfile.TemporaryDirectory(prefix="medbench-uibench-") as tmp:
        root = Path(tmp)
        specs, data, home = write_specs(root / "specs", extra), root / "data", root / "data" / "dagster"
        env = child_env({"MEDBENCH_SPECS": str(specs), "MEDBENCH_DATA": str(data), "DAGSTER_HOME": str(home),
                         "PYTHONUNBUFFERED": "1"})
        first = _cli(env)
        n = 4 + extra
        k = min(n, args.per_partition) if args.per_partition > 0 else n
        print(f"setup: {n} vitaldb-ioh@0 evaluations materialized by the CLI in {first:.1f} s", flush=True)
        sync_partitions(env)
        with DagsterUI(env, root / "logs") as ui:
            ranged, spans = _ranged_backfill(ui, home)
            per_partition = _per_partition_backfill(ui, home, env, k)
            launched = _evaluate_all(ui, home, env)
        again = _cli(env)
    print(f"UI backfill (ranged)     {n} reused partitions: {ranged:6.1f} s ({ranged / n:.2f} s per partition, "
          f"{len(spans)} run{'s' if len(spans) != 1 else ''}, until marked complete)  "
          "target about 1 s per partition", flush=True)
    created, started, ended = min(c for c, _, _ in spans), min(s for _, s, _ in spans), max(e for _, _, e in spans)
    print(f"  of which: the daemon's backfill tick made the run at +{created:.1f} s, it started at +{started:.1f} s, "
          f"ran {ended - started:.1f} s ({(ended - started) / n * 1000:.0f} ms per partition), and the next tick "
          f"marked the backfill complete {ranged - ended:.1f} s after it ended", flush=True)
    print(f"one run per partition    {k} reused partitions: {per_partition:6.1f} s ({per_partition / k:.2f} s per "
          f"partition, {k} runs; dagster job backfill)", flush=True)
    print(f"evaluate_all             {n} reused partitions: {launched:6.1f} s ({launched / n:.2f} s per partition, "
          "1 run)", flush=True)
    print(f"medbench materialize (CLI), same partitions: {again:.1f} s", flush=True)
    per_ratio = (per_partition / k) / (ranged / n)
    print(f"one run per partition / ranged backfill (per partition): {per_ratio:.2f}x ; ranged backfill / "
          f"evaluate_all: {ranged / launched:.2f}x ; ranged backfill / CLI: {ranged / again:.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
