"""Rule one's record in Dagster: a reused partition that Dagster does not show with its run id gets
one runless observation (data version = the run id); a partition already shown with it gets none,
so a pass over many reused partitions writes no events."""

from __future__ import annotations

import shutil

import dagster as dg
import pytest

from pipelines.dagster.inputs_state import shown_versions
from support.commands import run_medbench

METRICS = dg.AssetKey("vitaldb_ioh_metrics")


def _reused(stdout: str) -> dict[str, str]:
    rows = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and "|" in parts[0] and parts[1] == "reused":
            rows[parts[0]] = parts[2]
    return rows


def _observations(data) -> list:
    with dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
        return instance.fetch_observations(METRICS, limit=1000).records


@pytest.mark.slow
def test_reuses_are_recorded_once_where_dagster_does_not_show_them(demo_data, tmp_path):
    data = tmp_path / "data"  # the demo's results, with a new, empty run history
    shutil.copytree(demo_data, data, ignore=shutil.ignore_patterns("dagster"))
    first = run_medbench("materialize", "--demo", "--task", "vitaldb-ioh", data=data)
    reused = _reused(first.stdout)
    assert len(reused) == 4, first.stdout
    observed = _observations(data)
    assert sorted(r.event_log_entry.asset_observation.partition for r in observed) == sorted(reused)
    assert {r.event_log_entry.asset_observation.metadata["run_id"].value for r in observed} == set(reused.values())
    with dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
        assert shown_versions(instance, METRICS, list(reused)) == reused

    again = run_medbench("materialize", "--demo", "--task", "vitaldb-ioh", data=data)
    assert _reused(again.stdout) == reused
    assert len(_observations(data)) == len(observed)  # already shown with their run ids: nothing written


def test_the_newer_of_materialization_and_observation_is_what_dagster_shows():
    tag = "dagster/data_version"
    with dg.DagsterInstance.ephemeral() as instance:
        def report(kind, partition: str, version: str) -> None:
            instance.report_runless_asset_event(kind(asset_key=METRICS, partition=partition, tags={tag: version}))

        report(dg.AssetMaterialization, "a", "run-x")
        report(dg.AssetMaterialization, "b", "run-x")
        report(dg.AssetObservation, "a", "run-y")  # a reuse of another run id, after the materialization
        assert shown_versions(instance, METRICS, ["a", "b", "c"]) == {"a": "run-y", "b": "run-x"}
        report(dg.AssetMaterialization, "a", "run-z")  # a new run after that reuse
        assert shown_versions(instance, METRICS, ["a"]) == {"a": "run-z"}
