"""``medbench materialize`` records the pairs it skips (a vLLM model without a GPU) in Dagster as
materialized-as-skipped, as a backfill's ranged run does, so the UI shows no evaluation partition
missing after the CLI (issue #23: "Missing (1)", grey lineage, "upstream materializations are not
available"), and each of their checks says skipped and why. A second pass writes nothing."""

from __future__ import annotations

import shutil

import dagster as dg
import pytest
from dagster._core.instance.utils import RUNLESS_RUN_ID
from dagster._core.storage.event_log.base import PartitionKeyFilter
from support.commands import run_medbench

from pipelines.backends.registry import not_runnable_reason
from pipelines.dagster.definitions import CHECKS, FAMILY_ASSETS
from pipelines.dagster.partitions import asset_prefix
from support.plugins import specs as load_specs

VLLM = "clinicalqa@0|google/medgemma-27b-text-it"


def _runless(instance) -> list:
    return instance.all_logs(RUNLESS_RUN_ID)


@pytest.mark.slow
def test_after_materialize_no_evaluation_partition_is_missing_and_a_second_pass_writes_nothing(demo_data, tmp_path):
    reason = not_runnable_reason(load_specs().model("google/medgemma-27b-text-it"))
    assert reason, "this test needs a machine where the vLLM model cannot run (no GPU)"
    data = tmp_path / "data"
    shutil.copytree(demo_data, data)  # `medbench materialize --demo` on a fresh data dir, with its Dagster history
    with dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
        for family, fa in FAMILY_ASSETS.items():
            partitions = set(instance.get_dynamic_partitions(f"{asset_prefix(family)}_evaluations"))
            assert partitions
            for asset in (fa.predictions, fa.metrics):
                assert instance.get_materialized_partitions(dg.AssetKey(asset)) == partitions, asset
        for asset in (FAMILY_ASSETS["clinicalqa"].predictions, FAMILY_ASSETS["clinicalqa"].metrics):
            rec = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[VLLM]), limit=1).records[0]
            meta, tags = rec.asset_materialization.metadata, rec.asset_materialization.tags
            run_id = meta["run_id"].value
            assert tags["dagster/data_version"] == f"skipped:{run_id}"
            assert meta["evaluated"].value is False and "cannot run here" in meta["skipped_reason"].value
            assert not (data / "artifacts" / run_id).exists()
        # Every check on the skipped pair has a verdict saying so (a warning), none left unexecuted.
        qa = {dg.AssetKey(FAMILY_ASSETS["clinicalqa"].predictions), dg.AssetKey(FAMILY_ASSETS["clinicalqa"].metrics)}
        qa_checks = [k for c in CHECKS for k in c.check_keys if k.asset_key in qa]
        latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            qa_checks, partition_filter=PartitionKeyFilter(key=VLLM))
        assert set(latest) == set(qa_checks)
        for record in latest.values():
            ev = record.event.dagster_event.event_specific_data
            assert ev.severity == dg.AssetCheckSeverity.WARN and "cannot run here" in ev.metadata["verdict"].value
        before = len(_runless(instance))
    again = run_medbench("materialize", "--demo", data=data)
    assert f"{VLLM}" in again.stdout and "skipped" in again.stdout
    with dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
        assert len(_runless(instance)) == before  # already shown as skipped, every reuse shown: nothing written
