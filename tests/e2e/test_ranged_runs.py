"""A backfill's ranged run (the evaluation assets' single-run backfill policy): rule one for every
partition in one run, reuses and skips recorded as that run's materializations (with the data
version, code version and inputs a run of the partition alone would record), and only what needs
work run as its own ``evaluate_<family>`` run.

In-process (``dg.materialize`` with Dagster's range tags, as the backfill daemon tags the run), on
an ephemeral instance over a private copy of the demo data: no daemon, so the work runs here,
bounded by the limits. The daemon's queued path is in test_ui_backfill.py."""

import shutil
from pathlib import Path

import dagster as dg
import pytest

from pipelines.backends.registry import not_runnable_reason
from pipelines.dagster import engine_calls as engine
from pipelines.dagster.child_runs import PARENT_TAG
from pipelines.dagster.definitions import CHECKS, FAMILY_ASSETS, defs
from pipelines.dagster.partitions import sync_evaluation_partitions
from pipelines.dagster.resources import MedbenchResource
from support.plugins import specs as load_specs
from medbench.layout import DataDir
from medbench.records import decode_record

QA = FAMILY_ASSETS["clinicalqa"]
VLLM = "clinicalqa@0|google/medgemma-27b-text-it"
RANDOM = "clinicalqa@0|medbench/random"
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


@pytest.fixture
def data(demo_data, tmp_path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(demo_data, copy, ignore=shutil.ignore_patterns("dagster"))
    return copy


def _run_id(data: Path, key: str) -> str:
    return engine.resolve_evaluation(load_specs(), DataDir(data), *engine.split_partition_key(key)).run_id


def _ranged(data: Path, instance, keys: list[str], selection=(QA.predictions, QA.metrics)):
    return dg.materialize([*defs.assets, *CHECKS], selection=list(selection), instance=instance,
                          resources={"medbench": MedbenchResource(data_dir=str(data))}, raise_on_error=False,
                          tags={RANGE_START: keys[0], RANGE_END: keys[-1]})


def _latest(instance, asset: str) -> dict:
    """partition -> its newest materialization (run id, tags, metadata)."""
    out = {}
    for rec in instance.fetch_materializations(dg.AssetKey(asset), limit=100).records:
        out.setdefault(rec.partition_key, rec)
    return out


def test_a_ranged_run_reuses_and_skips_every_partition_in_one_run(demo_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(demo_data, data)  # with the CLI's Dagster history: the inputs' materializations
    with dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
        sync_evaluation_partitions(instance, load_specs())
        keys = instance.get_dynamic_partitions("clinicalqa_evaluations")
        known = {r.run_id for r in instance.get_runs()}
        result = _ranged(data, instance, keys)
        assert result.success
        assert [r.run_id for r in instance.get_runs() if r.run_id not in known] == [result.run_id]  # one run
        for asset in (QA.predictions, QA.metrics):
            latest = _latest(instance, asset)
            assert sorted(latest) == sorted(keys)  # every partition of the range: the backfill ends green
            for key, rec in latest.items():
                assert rec.run_id == result.run_id
                tags, meta = rec.asset_materialization.tags, rec.asset_materialization.metadata
                assert tags["dagster/code_version"] == engine.family_spec_hash(load_specs(), "clinicalqa")
                run = _run_id(data, key)
                if key == VLLM and not_runnable_reason(load_specs().model("google/medgemma-27b-text-it")):
                    assert tags["dagster/data_version"] == f"skipped:{run}"
                    assert "cannot run here" in meta["skipped_reason"].value
                else:
                    assert tags["dagster/data_version"] == run and meta["reused"].value is True
                    assert meta["run_id"].value == run
        # predictions records name the instances record they were made from, metrics records the
        # predictions record (the UI's staleness reads these as it reads a step's own output)
        items = instance.fetch_materializations(dg.AssetKey(QA.instances), limit=1).records[0]
        pred_tags = _latest(instance, QA.predictions)[RANDOM].asset_materialization.tags
        assert pred_tags[f"dagster/input_event_pointer/{QA.instances}"] == str(items.storage_id)
        assert pred_tags[f"dagster/input_data_version/{QA.instances}"] == \
            items.asset_materialization.tags["dagster/data_version"]
        pred = _latest(instance, QA.predictions)[RANDOM]
        metric_tags = _latest(instance, QA.metrics)[RANDOM].asset_materialization.tags
        assert metric_tags["dagster/input_event_pointer/clinicalqa_predictions"] == str(pred.storage_id)
        assert metric_tags["dagster/input_data_version/clinicalqa_predictions"] == _run_id(data, RANDOM)


def test_a_ranged_run_runs_only_what_needs_work_as_its_own_run(data):
    run = _run_id(data, RANDOM)
    before = (data / "artifacts" / run / "result.json").read_bytes()
    (data / "artifacts" / run / "result.json").unlink()
    with dg.DagsterInstance.ephemeral() as instance:
        sync_evaluation_partitions(instance, load_specs())
        keys = instance.get_dynamic_partitions("clinicalqa_evaluations")
        result = _ranged(data, instance, keys)
        assert result.success
        children = [r for r in instance.get_runs() if r.run_id != result.run_id]
        assert [(r.job_name, r.tags["dagster/partition"], r.tags["medbench/pool"], r.tags[PARENT_TAG])
                for r in children] == [("evaluate_clinicalqa", RANDOM, "cpu", result.run_id)]
        assert children[0].status == dg.DagsterRunStatus.SUCCESS
        assert _latest(instance, QA.metrics)[RANDOM].run_id == children[0].run_id
    record = engine.existing_result(DataDir(data), run)
    assert record is not None and record.primary.value == decode_record(before).primary.value


def test_a_ranged_run_of_the_metrics_alone_records_only_metrics(data):
    with dg.DagsterInstance.ephemeral() as instance:
        sync_evaluation_partitions(instance, load_specs())
        keys = instance.get_dynamic_partitions("clinicalqa_evaluations")
        assert _ranged(data, instance, keys, selection=[QA.metrics]).success
        assert sorted(_latest(instance, QA.metrics)) == sorted(keys)
        assert _latest(instance, QA.predictions) == {}


def test_a_hand_typed_key_in_a_range_fails_the_run_at_once_with_its_reason(data):
    bad = "clinicalqa@0|nobody/none"
    with dg.DagsterInstance.ephemeral() as instance:
        sync_evaluation_partitions(instance, load_specs())
        instance.add_dynamic_partitions("clinicalqa_evaluations", [bad])
        keys = instance.get_dynamic_partitions("clinicalqa_evaluations")
        result = _ranged(data, instance, keys)
        assert not result.success
        failure = next(e for e in result.all_events if e.is_step_failure)
        message = failure.step_failure_data.user_failure_data.description
        assert message == f"{bad} names no valid (task, model) pair in the specs: unknown model 'nobody/none'"
        assert _latest(instance, QA.predictions) == {}  # nothing recorded before the check


def test_a_ranged_run_leaves_no_check_unexecuted_on_the_partitions_it_records(data):
    """Issue #23: the ranged run's check steps never execute (its step yields no output), and a
    planned check that never ran shows "Skipped" on every partition of the range in the UI. The
    ranged run now records each check's verdict itself: from the stored files for a reused
    partition (tiny-llama's 0% parse rate warns, quoting its spec's description), and a warning
    saying skipped and why for a pair that cannot run here."""
    from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
    from dagster._core.storage.event_log.base import PartitionKeyFilter

    check_keys = [k for c in CHECKS for k in c.check_keys
                  if k.asset_key in {dg.AssetKey(QA.predictions), dg.AssetKey(QA.metrics)}]
    assert {k.name for k in check_keys} == {"every_instance_predicted_once", "parse_rate_reasonable",
                                            "metrics_publishable"}
    with dg.DagsterInstance.ephemeral() as instance:
        sync_evaluation_partitions(instance, load_specs())
        keys = instance.get_dynamic_partitions("clinicalqa_evaluations")
        result = _ranged(data, instance, keys)
        assert result.success
        verdicts = {}
        for key in keys:
            latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
                check_keys, partition_filter=PartitionKeyFilter(key=key))
            assert set(latest) == set(check_keys), key
            for check_key, record in latest.items():
                assert record.run_id == result.run_id
                assert record.status in (AssetCheckExecutionRecordStatus.SUCCEEDED,
                                         AssetCheckExecutionRecordStatus.FAILED), (key, check_key, record.status)
                ev = record.event.dagster_event.event_specific_data
                assert ev.target_materialization_data.run_id == result.run_id
                verdicts[key, check_key.name] = ev
    assert verdicts[RANDOM, "parse_rate_reasonable"].passed
    assert verdicts[RANDOM, "every_instance_predicted_once"].passed
    assert verdicts[RANDOM, "metrics_publishable"].passed  # nothing withheld
    tiny = verdicts["clinicalqa@0|medbench/tiny-llama", "parse_rate_reasonable"]
    assert not tiny.passed and tiny.severity == dg.AssetCheckSeverity.WARN
    assert "random weights" in tiny.metadata["verdict"].value and tiny.metadata["parse_rate"].value == 0.0
    if not_runnable_reason(load_specs().model("google/medgemma-27b-text-it")):
        for name in ("parse_rate_reasonable", "every_instance_predicted_once", "metrics_publishable"):
            skipped = verdicts[VLLM, name]
            assert not skipped.passed and skipped.severity == dg.AssetCheckSeverity.WARN
            assert "cannot run here" in skipped.metadata["verdict"].value
