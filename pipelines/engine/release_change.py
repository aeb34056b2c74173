"""``release()`` at the cost of the change: only the tasks a publish touches are read and recomputed.

A board of many tasks and many results changes by a few results at a time, so a publish reads what
it needs from the current version's file (``warehouse.publish_change``: one columnar read of the
run ids, their tasks and withdrawals) and from the run directories' names, and then:

- decodes the result.json of the new runs, and of every result of each *touched* task (a task with a
  new result or a withdrawal that came or went: its supersessions, ranks and board can change), and
  of no other;
- signs the new results only (the others keep the signature the file holds);
- re-ranks the touched tasks' blocks (``rank_rows``, reusing those blocks whose run ids did not change)
  and compares with the baseline only results without a stored comparison to the same baseline run;
- logs the new results, the withdrawals and the release in the transparency log.

Its cost is one task's (reading its results and their predictions for the changed blocks) plus a
columnar read of the run ids, never the whole board's. ``release_change`` returns None where the
change cannot be published this way (no current version, a changed task or dataset spec, a removed
run, ``warehouse.publish_change.NotIncremental``), and ``release()`` publishes the whole catalog
(docs/concepts.md, "Versions and releases").
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import msgspec

from pipelines.engine.reference_model import reference_comparison_rows
from pipelines.engine.identity import code_revision
from pipelines.engine.ranking import rank_rows
from pipelines.engine.specs import Specs
from medbench.kinds import kinds
from warehouse.keys import record_key
from medbench.layout import DataDir
from warehouse.publish_change import (
    Change,
    NotIncremental,
    Published,
    publish_change,
    published_state,
    read_baselines,
    read_task_ranks,
    stored_records,
)
from medbench.records import ResultRecord, decode_record
from warehouse.signing import SigningKey, published_record, sign_results, utc_stamp
from warehouse.withdrawals import public_map, withdrawals

Log = Callable[[str], None]


def run_dirs(data: DataDir) -> set[str]:
    """The run directories' names (run ids): one directory listing, no file read."""
    try:
        with os.scandir(data.artifacts) as entries:
            return {e.name for e in entries if e.is_dir()}
    except FileNotFoundError:
        return set()


def _read(data: DataDir, run_id: str) -> ResultRecord:
    return decode_record((data.artifacts / run_id / "result.json").read_bytes())


def _rewritten(data: DataDir, published: Published) -> list[ResultRecord]:
    """Published results whose result.json was written again since the current version listed the run
    folders (``medbench materialize --force`` reruns under the same run id) and now holds another
    record. One ``stat`` per published run (a file written since then, with a second's margin for
    coarse file-system clocks); only those files are read."""
    since = published.listed_at - 1_000_000_000
    recent = []
    folder = str(data.artifacts)
    for run_id in published.task_of:
        try:
            if os.stat(f"{folder}/{run_id}/result.json").st_mtime_ns >= since:
                recent.append(run_id)
        except OSError:
            continue
    if not recent:
        return []
    stored = stored_records(data, published.version, recent)
    out = []
    for run_id in recent:
        record = _read(data, run_id)
        if run_id not in stored or msgspec.json.decode(stored[run_id]) != published_record(record):
            out.append(record)
    return out


def release_change(specs: Specs, data: DataDir, key: SigningKey, transparency: Any,
                   log: Log) -> tuple[str, bool, int] | None:
    """Publish what changed since the current version; None where only a full publish can (see above)."""
    from pipelines.engine.catalog_rows import orphan_models, spec_rows

    published = published_state(data)
    if published is None or published.listed_at is None:
        return None
    listed_at = time.time_ns()
    on_disk = run_dirs(data)
    if not published.task_of.keys() <= on_disk:
        return None  # a published run is gone: the full publish says which
    new = [_read(data, run_id) for run_id in sorted(on_disk - published.task_of.keys())
           if (data.artifacts / run_id / "result.json").exists()]
    rewritten = _rewritten(data, published)
    withdrawn = public_map(withdrawals(data))
    # published results whose withdrawal came or went (a new result's goes with its task)
    moved = {run_id for run_id in withdrawn.keys() | published.withdrawn.keys()
             if run_id in published.task_of and withdrawn.get(run_id) != published.withdrawn.get(run_id)}
    touched = sorted({r.task for r in new} | {published.task_of[run_id] for run_id in moved}
                     | {r.task for r in rewritten})
    touched_set = set(touched)
    results = new + [_read(data, run_id) for run_id, task in sorted(published.task_of.items()) if task in touched_set]
    datasets, tasks, models = spec_rows(specs, data)
    known_keys = {k.key_id for k in record_key(data, key)}
    signatures = sign_results(data, [*new, *rewritten], key, known_keys)
    ranked = [r for r in results if r.run_id not in withdrawn]
    task_rows = [t for t in tasks if f"{t['slug']}@{t['version']}" in touched_set]
    ranks = rank_rows(data, ranked, task_rows, read_task_ranks(data, published.version, touched), log)
    previous = {(b["run_id"], b["baseline_run_id"]): b
                for b in read_baselines(data, published.version, [r.run_id for r in results])}
    change = Change(
        datasets=datasets, tasks=tasks, models=models, demo=data.demo_or_real() == "demo", touched=touched, results=results,
        new=[r.run_id for r in new], withdrawn=withdrawn, signatures=signatures, ranks=ranks,
        baseline_comparisons=reference_comparison_rows(specs, data, results, only=touched_set, previous=previous),
        code_revision=code_revision(), kind_columns={name: dict(k.sql_types) for name, k in kinds().items()},
        rewritten=[r.run_id for r in rewritten], orphans=orphan_models(specs, new),
        extra_meta={"listed_at": str(listed_at)})
    try:
        version, changed = publish_change(data, change, sign=lambda message: key.sign(message, utc_stamp()))
    except NotIncremental as exc:
        log(f"publishing the whole catalog: {exc}")
        return None
    transparency.record([*new, *rewritten], withdrawn)
    total = len(published.task_of) + len(new)
    log(("published" if changed else "unchanged, kept") + f" warehouse version {version} "
        f"with {total} results at {data.duckdb_link} ({len(new)} new, {len(touched)} task(s) touched)")
    return version, changed, total
