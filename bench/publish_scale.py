"""Benchmark: what a publish and a release lookup cost as results grow (issue 28).

Since schema 6 a publish copies every run's predictions into the DuckDB file (so the file answers
from anywhere) and appends the release's manifest to the release log; a ``?release=`` answer is
built from that log. Both must grow no faster than linearly with the number of results. For each
size (generated results, about 2.1 per model, 50 predictions each, ``bench._api_warehouse``) this
publishes a fresh data directory twice (the second publish with one result more, so the log holds two
releases) and measures:

- ``publish``: the second publish's wall time (build the file with the predictions copied in, write
  the release), and the file's size (``predictions`` bytes: the copied tables' share);
- ``release lookup``: load the served tables, then the first ``/v1/leaderboard?release=<first>``
  answer (reading the log and building the release's view: the cold cost) and a repeat (memoised).

- ``log`` (the transparency log, ``warehouse.tlog``, issue 37): append every result and both
  releases as entries and sign a checkpoint (``log append``), verify the whole log as a publish
  does before appending (``log audit``), then the longest inclusion proof over every entry against
  its bound, ceil(log2 n) hashes, and the mean time to build one (``proof``).

- ``release history`` (issue 43): the peak RSS of a process that loads a release log of 10 and of
  10,000 records (a full manifest of 1,000 results, then deltas, with the publisher's snapshots) and
  rebuilds the newest release's full manifest; target: within 1.3x.

The second publish is incremental (``warehouse.delta``: the previous file copied, the change applied),
so its time is meant to stay near flat as the board grows; it still goes through
``warehouse.publish`` directly, not ``engine.release``'s ``publish_results()``.

It prints each size, then the ratios of the largest size to the smallest against the ratio of
sizes: "linear" when the time ratio is at most 1.5x the size ratio (a margin for noise).

    python -m bench.publish_scale [--sizes 1000 10000] [--smoke]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import math
import tempfile
import time
from pathlib import Path

import duckdb

from bench._api_warehouse import CHOICE_TASK, build_catalog

UTC = dt.timezone.utc
SIZES = {"full": (1_000, 10_000), "smoke": (40, 200)}
LINEAR_MARGIN = 1.5


@dataclasses.dataclass
class Measured:
    results: int
    publish_s: float
    file_mib: float
    predictions_mib: float
    cold_release_s: float
    warm_release_s: float
    log: LogMeasured | None = None


@dataclasses.dataclass
class LogMeasured:
    entries: int
    append_s: float
    audit_s: float
    longest_proof: int
    bound: int
    proof_us: float


def measure_log(root: Path, data, results) -> LogMeasured:
    """The transparency log of this publish: append, audit, and every entry's inclusion proof."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from warehouse.releases import read_releases
    from warehouse.tlog.audit import audit
    from warehouse.tlog.entries import record_sha256, release_entry, result_entry
    from warehouse.tlog.publisher import append
    from warehouse.tlog.signer import Ed25519NoteSigner
    from warehouse.tlog.store import LogStore

    store = LogStore.of_data(data.root)
    entries = [result_entry(r.run_id, record_sha256(r)) for r in results]
    entries += [release_entry(r.id, r.manifest_sha256) for r in read_releases(data)]
    key = Ed25519NoteSigner(Ed25519PrivateKey.generate())
    started = time.perf_counter()
    checkpoint = append(store, entries, key, "bench/log", root / "kept.checkpoint")
    append_s = time.perf_counter() - started
    started = time.perf_counter()
    audit(store, "bench/log", (root / "kept.checkpoint").read_text())
    audit_s = time.perf_counter() - started
    n = checkpoint.size
    started = time.perf_counter()
    longest = max(len(store.inclusion(i, n)) for i in range(n))
    proof_us = (time.perf_counter() - started) / n * 1e6
    return LogMeasured(n, append_s, audit_s, longest, math.ceil(math.log2(n)), proof_us)


def _predictions_bytes(path: Path) -> int:
    """Bytes of the blocks holding the copied predictions tables (DuckDB's storage info)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        block_size = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0]
        blocks = sum(con.execute(f"SELECT count(DISTINCT block_id) FROM pragma_storage_info('{table}') "
                                 "WHERE block_id >= 0").fetchone()[0]
                     for table in ("predictions_choice", "predictions_score"))
    finally:
        con.close()
    return blocks * int(block_size)


def measure(root: Path, n_results: int) -> Measured:
    from api import answers
    from api.release_views import as_of
    from api.tables import load_tables
    from warehouse.layout import DataDir
    from warehouse.publish import publish

    data = DataDir(root)
    catalog = build_catalog(data, max(1, round(n_results / 2.1)))
    first = dataclasses.replace(catalog, results=catalog.results[:-1])
    release, _ = publish(data, first, now=dt.datetime(2026, 12, 1, 12, tzinfo=UTC))
    started = time.perf_counter()
    version, _ = publish(data, catalog, now=dt.datetime(2026, 12, 1, 13, tzinfo=UTC))
    publish_s = time.perf_counter() - started
    path = data.version_file(version)
    tables = load_tables(data, version)
    answers.leaderboard(tables, CHOICE_TASK, None, 100, "http://bench")  # the current answer: code paths warm
    started = time.perf_counter()
    answers.leaderboard(as_of(tables, data, release), CHOICE_TASK, None, 100, "http://bench")
    cold = time.perf_counter() - started
    started = time.perf_counter()
    answers.leaderboard(as_of(tables, data, release), CHOICE_TASK, None, 100, "http://bench")
    warm = time.perf_counter() - started
    return Measured(len(catalog.results), publish_s, path.stat().st_size / 2**20, _predictions_bytes(path) / 2**20,
                    cold, warm, measure_log(root, data, catalog.results))


HISTORY_SCRIPT = """
import resource, sys
from warehouse.layout import DataDir
from warehouse.releases import find_release, manifest_of, read_releases
data = DataDir(sys.argv[1])
last = read_releases(data)[-1]
assert find_release(data, last.id) is last and manifest_of(data, last)["release"] == last.id
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def history_rss_mib(root: Path, releases: int, results: int = 1000) -> float:
    """Peak RSS (MiB) of a process that loads a release log of ``releases`` records (the first a full
    manifest of ``results`` entries, each later one a delta withdrawing or restoring one result, as a
    publish writes them) and rebuilds the newest release's full manifest."""
    import os
    import subprocess
    import sys

    from warehouse.layout import DataDir
    from warehouse.release_deltas import SNAPSHOT_EVERY, apply_deltas, write_snapshot
    from warehouse.releases import ReleaseRecord, append_release, make_record, manifest_bytes

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
        append_release(data, record)
        if (k + 1) % SNAPSHOT_EVERY == 0:
            write_snapshot(data, release_id, dict(manifest, release=release_id))
        previous = record
    out = subprocess.run([sys.executable, "-c", HISTORY_SCRIPT, str(root)], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    return int(out.stdout.split()[-1]) / 1024


def report(rows: list[Measured]) -> list[str]:
    lines = [f"{'results':>8} {'publish s':>10} {'file MiB':>9} {'predictions MiB':>16} {'release cold ms':>16} "
             f"{'release warm ms':>16}"]
    for m in rows:
        lines.append(f"{m.results:>8} {m.publish_s:>10.3f} {m.file_mib:>9.1f} {m.predictions_mib:>16.1f} "
                     f"{m.cold_release_s * 1e3:>16.2f} {m.warm_release_s * 1e3:>16.3f}")
    for m in rows:
        if m.log is not None:
            g = m.log
            lines.append(f"log: {g.entries} entries, append {g.append_s:.3f} s, audit {g.audit_s:.3f} s, longest "
                         f"inclusion proof {g.longest_proof} hashes (bound ceil(log2 n) = {g.bound}: "
                         f"{'within' if g.longest_proof <= g.bound else 'OVER'}), {g.proof_us:.0f} us a proof")
    small, large = rows[0], rows[-1]
    size_x = large.results / small.results
    for name, a, b in (("publish", small.publish_s, large.publish_s),
                       ("release lookup (cold)", small.cold_release_s, large.cold_release_s)):
        time_x = b / max(a, 1e-9)
        verdict = "linear or better" if time_x <= LINEAR_MARGIN * size_x else "FASTER THAN LINEAR"
        lines.append(f"{name}: {time_x:.2f}x the time for {size_x:.1f}x the results ({time_x / size_x:.2f} per "
                     f"unit of growth): {verdict}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.publish_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None, metavar="N", help="numbers of results")
    parser.add_argument("--smoke", action="store_true", help=f"tiny sizes {SIZES['smoke']} (tests)")
    args = parser.parse_args(argv)
    sizes = sorted(args.sizes or SIZES["smoke" if args.smoke else "full"])
    if len(sizes) < 2 or sizes[0] < 2:
        parser.error("give at least two sizes of 2 results or more")
    rows = []
    with tempfile.TemporaryDirectory(prefix="medbench-publish-scale-") as work:
        for n in sizes:
            rows.append(measure(Path(work) / f"data-{n}", n))
            print(f"measured {rows[-1].results} results", flush=True)
        for line in report(rows):
            print(line, flush=True)
        few, many = (10, 100) if args.smoke else (10, 10_000)
        rss = {n: history_rss_mib(Path(work) / f"history-{n}", n) for n in (few, many)}
    verdict = "within" if rss[many] <= 1.3 * rss[few] else "OVER"
    print(f"release history: peak RSS {rss[few]:.1f} MiB with {few} releases, {rss[many]:.1f} MiB with {many} "
          f"({rss[many] / rss[few]:.2f}x; target within 1.3x: {verdict})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
