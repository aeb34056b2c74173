"""Gather specs and every finished run into a Catalog and publish it as a new warehouse version.

Each spec is published in the form its hash is taken over (defaults omitted, ``spec_builtins``),
so a reader can check ``sha256(canonical JSON of spec) == spec_hash`` from the warehouse alone;
except where a model's settings hold a redacted value (``pipelines.backends.redact``): the hash is
taken over what ran, the warehouse shows only what may be published.
"""

from __future__ import annotations

import time
from typing import Callable

from pipelines.engine.identity import code_revision
from medbench.kinds import kinds
from pipelines.engine.ranking import rank_rows
from pipelines.engine.reference_model import reference_comparison_rows
from pipelines.engine.catalog_rows import orphan_models, spec_rows
from pipelines.engine.specs import Specs
from medbench.layout import DataDir
from warehouse.publish import Catalog, publish
from warehouse.read import read_ranks
from medbench.records import ResultRecord, decode_record
from warehouse.keys import sign_catalog, signing_key
from warehouse.signing import SigningKey
from warehouse.tlog import publishing as tlog_publishing
from warehouse.withdrawals import public_map, withdrawals

Log = Callable[[str], None]


def finished_results(data: DataDir) -> list[ResultRecord]:
    """Every run whose result.json was written (the last step of a run, so never half-done)."""
    if not data.artifacts.exists():
        return []
    return [decode_record(p.read_bytes()) for p in sorted(data.artifacts.glob("*/result.json"))]


def readable_results(data: DataDir) -> list[ResultRecord]:
    """``finished_results`` without the ones whose result.json does not decode: what deciding whether
    to publish compares with the warehouse (the publish itself names a bad file, and fails on it)."""
    results = []
    for path in sorted(data.artifacts.glob("*/result.json")) if data.artifacts.exists() else []:
        try:
            results.append(decode_record(path.read_bytes()))
        except (OSError, ValueError):  # msgspec.DecodeError is a ValueError
            continue
    return results


def build_catalog(specs: Specs, data: DataDir) -> Catalog:
    datasets, tasks, models = spec_rows(specs, data)
    results = finished_results(data)
    models += orphan_models(specs, results)
    return Catalog(datasets=datasets, tasks=tasks, models=models, results=results, demo=data.demo_or_real() == "demo",
                   withdrawn=public_map(withdrawals(data)), code_revision=code_revision(),
                   baseline_comparisons=reference_comparison_rows(specs, data, results),
                   prediction_schemas=[specs.family_of(t).predictions_schema for t in specs.tasks.values()],
                   kind_columns={name: dict(k.sql_types) for name, k in kinds().items()},
                   kind_unnest={name: tuple(getattr(k, "sql_unnest", ())) for name, k in kinds().items()})


def publish_results(specs: Specs, data: DataDir, log: Log, key: SigningKey | None = None) -> tuple[str, bool, int]:
    """Publish every finished result; withdrawn ones stay published but are ranked on no leaderboard.

    Every result and the release manifest are signed with ``key``, by default the publisher's key
    (``warehouse.keys.signing_key``: ``SigningKeyError`` on real data without ``MEDBENCH_SIGNING_KEY``,
    raised before anything is published); the key is listed in the data directory's keys file.

    The transparency log is checked first (``warehouse.tlog.publishing``: ``LogIntegrityError`` when
    the log or the release log was edited, truncated or given a duplicate id; withdrawals missing
    from ``withdrawals.jsonl`` are restored from it), and every result, withdrawal and release is
    logged after the publish, under a checkpoint signed with ``key``.

    A publish on top of a current version costs the change (``pipelines.engine.release_change``):
    only the tasks with a new result or a withdrawal are read, ranked, compared and signed; the
    whole catalog is read and published only when that cannot be done (the first publish, a changed
    task or dataset spec, an older schema)."""
    from pipelines.engine.release_change import release_change

    key = key or signing_key(data, log)
    transparency = tlog_publishing.begin(data, key, log)
    incremental = release_change(specs, data, key, transparency, log)
    if incremental is not None:
        return incremental
    listed_at = time.time_ns()  # the next publish re-reads the result.json files written since (--force)
    catalog = build_catalog(specs, data)
    catalog.extra_meta["listed_at"] = str(listed_at)
    sign = sign_catalog(data, catalog, key)
    ranked = [r for r in catalog.results if r.run_id not in catalog.withdrawn]
    catalog.ranks = rank_rows(data, ranked, catalog.tasks, read_ranks(data), log)  # reuses unchanged blocks
    version, changed = publish(data, catalog, sign=sign)
    transparency.record(catalog.results, catalog.withdrawn)
    log(("published" if changed else "unchanged, kept") + f" warehouse version {version} "
        f"with {len(catalog.results)} results at {data.duckdb_link}")
    return version, changed, len(catalog.results)


release = publish_results  # the name before "publish" meant what publishes; scripts may still call it
