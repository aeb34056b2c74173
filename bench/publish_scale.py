"""Benchmark: what one more result costs to publish through ``publish_results()``, and a release lookup, as the board grows (issue 43).

The board is seeded in bulk (``bench._seeded_board``: T score tasks of ``--per-task`` results each,
1,000 by default, every result signed, each block's rank rows and each result's baseline comparison
stored, the transparency log holding every result), then one new result on one task is published
through the real publish path, ``pipelines.engine.release.release()`` (rank sets of the touched
task recomputed, the new result signed and compared with the task's baseline, the release record a
delta, the transparency log appended). Per board it prints:

- ``publish s``: the median wall time of ``--repeat`` such publishes (after one on another task, so
  imports and first-use costs are not counted), each adding a result to task 0;
- ``file MiB`` and ``predictions MiB`` (the copied predictions tables' share of the DuckDB file);
- ``release cold ms`` / ``warm ms``: ``/v1/leaderboard?release=<the last publish>`` answered from
  the served tables: the first answer (reading the release history and building the release's view)
  and a repeat (memoised);
- at boards of at most 10,000 results, the transparency log's longest inclusion proof over every
  entry against its bound, ceil(log2 n) hashes (issue 37).

Then the ratios of the largest board to the smallest, from the same run: the publish time against
its target (at most 3x), the cold lookup against the ratio of sizes (linear within a 1.5x margin);
and the peak RSS (VmHWM) of a process that reads a release history of 10,000 releases against one of
10 through the log's index (target: within 1.3x).

    python -m bench.publish_scale [--tasks 1 10 100] [--per-task 1000] [--repeat 3] [--tiny]

The full run (1, 10 and 100 tasks of 1,000 results) seeds 111,000 runs, mostly writing their
files (a 10,000-result board seeded in 22 s on a loaded 2-core machine, the run peaking at 0.84 GiB
with 10 tasks), so it is bounded by minutes and a few GiB.
``--tiny`` runs 1 and 2 tasks of 30 results (a check that every line prints, not a figure).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import math
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from bench._seeded_board import add_run, new_key, seed, task_ref

UTC = dt.UTC
TASKS = {"full": (1, 10, 100), "tiny": (1, 2)}
PER_TASK = {"full": 1000, "tiny": 30}
LINEAR_MARGIN = 1.5
PUBLISH_TARGET = 3.0
PROOF_UP_TO = 10_000
CHOICE_TASK = "clinicalqa@0"  # the release-history board's task (``history_rss_mib``)


@dataclasses.dataclass
class Measured:
    tasks: int
    results: int
    seed_s: float
    publish_s: float
    file_mib: float
    predictions_mib: float
    cold_release_s: float
    warm_release_s: float
    log_entries: int = 0
    longest_proof: int | None = None
    bound: int | None = None


def _predictions_bytes(path: Path) -> int:
    """Bytes of the blocks holding the copied predictions tables (DuckDB's storage info)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        block_size = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0]
        tables = [n for (n,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_type = "
                                            "'BASE TABLE' AND starts_with(table_name, 'predictions_')").fetchall()]
        blocks = sum(con.execute(f"SELECT count(DISTINCT block_id) FROM pragma_storage_info('{table}') "
                                 "WHERE block_id >= 0").fetchone()[0] for table in tables)
    finally:
        con.close()
    return blocks * int(block_size)


def _longest_proof(data) -> tuple[int, int, int]:
    from warehouse.tlog.store import LogStore

    store = LogStore.of_data(data.root)
    n = store.size()
    return n, max(len(store.inclusion(i, n)) for i in range(n)), math.ceil(math.log2(n))


def measure(work: Path, tasks: int, per_task: int, key_path: Path, repeat: int) -> Measured:
    from api import answers
    from api.release_views import as_of
    from api.tables import load_tables
    from pipelines.engine.release import publish_results

    root = work / f"board-{tasks}x{per_task}"
    started = time.perf_counter()
    data, specs = seed(root, tasks, per_task, key_path)
    seed_s = time.perf_counter() - started
    quiet = lambda _line: None
    add_run(data, tasks - 1, 0)
    publish_results(specs, data, quiet)  # first use: imports, caches
    times, said = [], []
    for i in range(1, repeat + 1):
        add_run(data, 0, i)
        started = time.perf_counter()
        version, changed, n = publish_results(specs, data, said.append)
        times.append(time.perf_counter() - started)
        assert changed, "the publish of a new result changed nothing"
    whole = [line for line in said if line.startswith("publishing the whole catalog")]
    if whole:
        print(f"warning: a measured publish went through the whole catalog ({whole[0]})", flush=True)
    path = data.version_file(version)
    tables = load_tables(data, version)
    answers.leaderboard(tables, task_ref(0), None, 100, "http://bench")  # the current answer: code paths warm
    started = time.perf_counter()
    answers.leaderboard(as_of(tables, data, version), task_ref(0), None, 100, "http://bench")
    cold = time.perf_counter() - started
    started = time.perf_counter()
    answers.leaderboard(as_of(tables, data, version), task_ref(0), None, 100, "http://bench")
    warm = time.perf_counter() - started
    measured = Measured(tasks, n, seed_s, statistics.median(times), path.stat().st_size / 2**20,
                        _predictions_bytes(path) / 2**20, cold, warm)
    if tasks * per_task <= PROOF_UP_TO:  # the seeded board's size (the measured publishes add a few)
        measured.log_entries, measured.longest_proof, measured.bound = _longest_proof(data)
    shutil.rmtree(root, ignore_errors=True)
    return measured


HISTORY_SCRIPT = """
import sys
from medbench.layout import DataDir
from warehouse.releases import find_release, latest_release, manifest_of, newest_releases
data = DataDir(sys.argv[1])
last = latest_release(data)
assert find_release(data, last.id) == last and manifest_of(data, last)["release"] == last.id
first = newest_releases(data, 1, int(sys.argv[2]) - 1)[0]
assert manifest_of(data, find_release(data, first.id))["release"] == first.id
assert len(newest_releases(data, 100)) == min(100, int(sys.argv[2]))
# VmHWM: this process's own peak (ru_maxrss keeps the forking parent's peak across exec)
print(next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def history_rss_mib(root: Path, releases: int, results: int = 1000) -> float:
    """Peak RSS (MiB) of a process that loads a release log of ``releases`` records (the first a full
    manifest of ``results`` entries, each later one a delta withdrawing or restoring one result, as a
    publish writes them) and rebuilds the newest release's full manifest."""
    import os
    import subprocess
    import sys

    from medbench.layout import DataDir
    from warehouse.release_deltas import SNAPSHOT_EVERY, apply_deltas, write_snapshot
    from warehouse.release_index import write_index
    from warehouse.releases import (
        ReleaseRecord,
        append_release,
        make_record,
        manifest_bytes,
    )

    data = DataDir(root)
    entries = [{"run_id": f"{i:012x}", "task": CHOICE_TASK, "model": f"p/m-{i}", "predictions_sha256": "0" * 64,
                "status": "current", "superseded_by": None} for i in range(results)]
    manifest = {"format": 1, "release": "", "demo": False, "code_revision": "bench", "results": entries,
                "specs": {"tasks": {CHOICE_TASK: "0" * 64}, "models": {e["model"]: "0" * 64 for e in entries}},
                "leaderboards": {}}
    when = dt.datetime(2026, 12, 1, tzinfo=UTC)
    previous = None
    for k in range(releases):
        when += dt.timedelta(seconds=1)
        release_id = when.strftime("%Y%m%dT%H%M%S%fZ") + f"-{k:08x}"
        if k:
            changed = dict(entries[k % results], status="current" if k % 2 == 0 else "withdrawn")
            delta = {"format": 2, "release": release_id, "previous_manifest_sha256": previous.manifest_sha256,
                     "demo": False, "code_revision": "bench", "specs": {"tasks": {}, "models": {}},
                     "specs_removed": {"tasks": [], "models": []}, "results": [changed], "removed": [],
                     "leaderboards": {}, "leaderboards_removed": []}
            manifest = apply_deltas(manifest, [delta])
            record = ReleaseRecord(id=release_id, published_at=when.isoformat(), n_results=results,
                                   tasks=[CHOICE_TASK], previous=previous.id, manifest=delta,
                                   manifest_sha256=hashlib.sha256(manifest_bytes(delta)).hexdigest())
        else:
            record = make_record(dict(manifest, release=release_id), when, None)
        append_release(data, record, index=False)  # in bulk: the index is written once, below
        if (k + 1) % SNAPSHOT_EVERY == 0:
            write_snapshot(data, release_id, dict(manifest, release=release_id))
        previous = record
    write_index(data)
    out = subprocess.run([sys.executable, "-c", HISTORY_SCRIPT, str(root), str(releases)], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    return int(out.stdout.split()[-1]) / 1024


def report(rows: list[Measured]) -> list[str]:
    lines = [(f"{'tasks':>6} {'results':>8} {'seed s':>8} {'publish s':>10} {'file MiB':>9} {'predictions MiB':>16} "
             f"{'share':>6} {'release cold ms':>16} {'release warm ms':>16}")]
    for m in rows:
        lines.append(f"{m.tasks:>6} {m.results:>8} {m.seed_s:>8.1f} {m.publish_s:>10.3f} {m.file_mib:>9.1f} "
                     f"{m.predictions_mib:>16.1f} {m.predictions_mib / max(m.file_mib, 1e-9):>6.0%} "
                     f"{m.cold_release_s * 1e3:>16.2f} {m.warm_release_s * 1e3:>16.3f}")
    for m in rows:
        if m.longest_proof is not None:
            lines.append(f"log at {m.results} results: {m.log_entries} entries, longest inclusion proof "
                         f"{m.longest_proof} hashes (bound ceil(log2 n) = {m.bound}: "
                         f"{'within' if m.longest_proof <= m.bound else 'OVER'})")
    small, large = rows[0], rows[-1]
    size_x = large.results / small.results
    publish_x = large.publish_s / max(small.publish_s, 1e-9)
    lines.append(f"publish: {publish_x:.2f}x the time at {large.results} results as at {small.results} "
                 f"({size_x:.1f}x the results; target at most {PUBLISH_TARGET:g}x: "
                 f"{'within' if publish_x <= PUBLISH_TARGET else 'OVER'})")
    cold_x = large.cold_release_s / max(small.cold_release_s, 1e-9)
    lines.append(f"release lookup (cold): {cold_x:.2f}x the time for {size_x:.1f}x the results ({cold_x / size_x:.2f} "
                 f"per unit of growth): {'linear or better' if cold_x <= LINEAR_MARGIN * size_x else 'FASTER THAN LINEAR'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.publish_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", "--sizes", type=int, nargs="+", default=None, metavar="T",
                        help=f"numbers of tasks of the boards (default {' '.join(map(str, TASKS['full']))})")
    parser.add_argument("--per-task", type=int, default=None, metavar="N",
                        help=f"results per task (default {PER_TASK['full']})")
    parser.add_argument("--repeat", type=int, default=3, metavar="K", help="measured publishes per board (median)")
    parser.add_argument("--tiny", "--smoke", action="store_true",
                        help=f"{' and '.join(map(str, TASKS['tiny']))} tasks of {PER_TASK['tiny']} results (a check)")
    args = parser.parse_args(argv)
    mode = "tiny" if args.tiny else "full"
    sizes = sorted(args.tasks or TASKS[mode])
    per_task = args.per_task or PER_TASK[mode]
    if len(sizes) < 2 or sizes[0] < 1 or per_task < 3 or args.repeat < 1:
        parser.error("give at least two numbers of tasks (1 or more), 3 or more results per task, --repeat 1 or more")
    rows = []
    with tempfile.TemporaryDirectory(prefix="medbench-publish-scale-") as work:
        keys = Path(work) / "keys"
        keys.mkdir()
        saved = {k: os.environ.get(k) for k in ("MEDBENCH_SIGNING_KEY", "MEDBENCH_KEY_HOME")}
        os.environ["MEDBENCH_SIGNING_KEY"] = str(new_key(keys))
        os.environ["MEDBENCH_KEY_HOME"] = str(keys)
        try:
            for t in sizes:
                rows.append(measure(Path(work), t, per_task, Path(os.environ["MEDBENCH_SIGNING_KEY"]), args.repeat))
                print(f"measured {rows[-1].tasks} task(s), {rows[-1].results} results", flush=True)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        for line in report(rows):
            print(line, flush=True)
        few, many = (10, 100) if args.tiny else (10, 10_000)
        rss = {n: history_rss_mib(Path(work) / f"history-{n}", n) for n in (few, many)}
    verdict = "within" if rss[many] <= 1.3 * rss[few] else "OVER"
    print(f"release history: peak RSS {rss[few]:.1f} MiB with {few} releases, {rss[many]:.1f} MiB with {many} "
          f"({rss[many] / rss[few]:.2f}x; target within 1.3x: {verdict})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
