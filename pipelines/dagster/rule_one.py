"""What rule one records without a run, for both launchers of a selection: ``medbench materialize``
(``orchestrate.py``) and the ``evaluate_all`` job (``evaluate_all.py``).

Why shared: a reused partition must show in the UI with its run id as data version whichever
launcher decided it, and both decide the same way whether the warehouse needs a new publish.
"""

from __future__ import annotations

from pipelines.orchestration.plan import Planned
from pipelines.orchestration.report import Outcome
from medbench.layout import DataDir


def detail(record) -> str:
    p = record.primary
    return f"{p.name} {p.value:.4f} [{p.ci_low:.4f}, {p.ci_high:.4f}]"


def record_reuses(instance, built, data: DataDir, reused: list[Planned],
                  decided_by: str = "medbench materialize (rule one)") -> list[Outcome]:
    """Outcomes of the reused partitions, and an AssetObservation (data version: the run id) on the
    metrics partition of each one Dagster does not already show with that run id."""
    import dagster as dg

    from pipelines.dagster.inputs_state import report_observations, shown_versions
    from pipelines.dagster.private_api import DATA_VERSION_TAG
    from pipelines.dagster.engine_calls import existing_result

    outcomes, events = [], []
    by_asset: dict[str, list[Planned]] = {}
    for p in reused:
        record = existing_result(data, p.run_id)
        outcomes.append(Outcome(p.partition, "reused", p.run_id, detail(record)))
        by_asset.setdefault(built.families[p.task.family].metrics, []).append(p)
    for asset, planned in by_asset.items():
        key = dg.AssetKey.from_user_string(asset)
        shown = shown_versions(instance, key, [p.partition for p in planned])
        events += [dg.AssetObservation(
            asset_key=key, partition=p.partition, tags={DATA_VERSION_TAG: p.run_id},
            metadata={"run_id": p.run_id, "reused": True, "decided_by": decided_by})
            for p in planned if shown.get(p.partition) != p.run_id]
    report_observations(instance, events)
    return outcomes


def publish_needed(data: DataDir) -> bool:
    """True when no version can be served, or the one readers would serve (the pointer's, else the
    newest sound kept one) was built with an older table schema (an upgraded medbench: its release
    log, signatures and portable tables come with the next publish, not the next new result), lacks a
    finished result or holds another record than its result.json."""
    import duckdb

    from pipelines.dagster.engine_calls import readable_results
    from warehouse.read import read_meta, schema_version_of
    from warehouse.repair import holds
    from warehouse.schema import SCHEMA_VERSION
    from warehouse.versions import choose

    chosen = choose(data)
    if chosen.version is None:
        return True
    try:
        if schema_version_of(read_meta(data, chosen.version)) < SCHEMA_VERSION:
            return True
    except (duckdb.Error, OSError):  # pruned or damaged since it was chosen: a publish decides afresh
        return True
    return not holds(data, chosen.version, readable_results(data))
