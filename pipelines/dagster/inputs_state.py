"""Whether the inputs are current, and recording rule-one reuses, both without launching a run.

Why the inputs check is safe: it skips the inputs run only when, for every selected family, a
current snapshot pointer and every task version's instances file exist, and Dagster's latest
materializations of the snapshot and instances assets carry today's code versions (the dataset
spec hash, the family's task spec hash) and the instances' data version names the current
snapshot. Any edited spec, new snapshot or missing file makes it run (``--refresh-inputs``
forces it, e.g. to pick up an upstream source that changed under the same spec).
"""

from __future__ import annotations

import dagster as dg

from pipelines.dagster import engine_calls as engine
from pipelines.dagster.engine_calls import NotMaterialized, current_snapshot


def _latest_tags(instance: dg.DagsterInstance, asset: str) -> dict:
    event = instance.get_latest_materialization_event(dg.AssetKey(asset))
    return dict(event.asset_materialization.tags or {}) if event and event.asset_materialization else {}


def current(instance: dg.DagsterInstance, specs, data, families) -> bool:
    registered = engine.families(specs)
    for fa in families:
        family = _family_for(registered, fa)
        if family is None:
            return False
        try:
            snap = current_snapshot(data, family.dataset)
        except NotMaterialized:
            return False
        family_hash = engine.family_spec_hash(specs, family.name)
        snap_tags, inst_tags = _latest_tags(instance, fa.snapshot), _latest_tags(instance, fa.instances)
        if snap_tags.get("dagster/code_version") != engine.dataset_spec_hash(specs, family.dataset):
            return False
        if inst_tags.get("dagster/code_version") != family_hash:
            return False
        if inst_tags.get("dagster/data_version") != f"{snap.snapshot_id}+{family_hash}":
            return False
        if not all(engine.instances_path(specs, data, t.ref).exists() for t in engine.tasks_of(specs, family.name)):
            return False
    return True


def _family_for(registered: dict, fa):
    from pipelines.dagster.partitions import predictions_asset_name

    return next((f for f in registered.values() if predictions_asset_name(f) == fa.predictions), None)


def latest_versions(instance: dg.DagsterInstance, asset_key: dg.AssetKey, partitions: list[str],
                    observations: bool = True) -> dict[str, tuple[int, str]]:
    """partition -> (storage id, data version) of its newest materialization, or observation too
    when ``observations``: two indexed queries per event type, whatever the number of partitions.
    A partition with no recorded data version is left out."""
    from pipelines.dagster.private_api import DATA_VERSION_TAG

    event_types = [dg.DagsterEventType.ASSET_MATERIALIZATION] + ([dg.DagsterEventType.ASSET_OBSERVATION] if observations else [])
    storage, wanted = instance.event_log_storage, set(partitions)
    latest: dict[str, tuple[int, str]] = {}
    for event_type in event_types:
        ids = storage.get_latest_storage_id_by_partition(asset_key, event_type, wanted)
        tags = storage.get_latest_tags_by_partition(asset_key, event_type, [DATA_VERSION_TAG], list(wanted))
        for partition, storage_id in ids.items():
            version = tags.get(partition, {}).get(DATA_VERSION_TAG)
            if version and storage_id > latest.get(partition, (-1, ""))[0]:
                latest[partition] = (storage_id, version)
    return latest


def shown_versions(instance: dg.DagsterInstance, asset_key: dg.AssetKey, partitions: list[str]) -> dict[str, str]:
    """partition -> the data version of its latest materialization or observation, whichever is newer.

    Why: rule one records a reuse only where Dagster does not already show that run id (an
    evaluation's data version is its run id), so a pass over 1,000 reused partitions writes nothing
    instead of 1,000 events; four indexed queries per asset, whatever the number of partitions."""
    return {p: version for p, (_, version) in latest_versions(instance, asset_key, partitions).items()}


def report_observations(instance: dg.DagsterInstance, observations: list[dg.AssetObservation]) -> None:
    """Runless observations, stored as one batch (one storage write, not one per partition)."""
    from pipelines.dagster.private_api import store_observations

    store_observations(instance, observations)
