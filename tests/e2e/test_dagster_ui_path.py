"""The maintainer's path in the Dagster UI: skips are not failures, bad keys fail at once with one
line, metadata links the result, publishing follows new results, force/regenerate, orphans.

In-process ``dg.materialize`` on an ephemeral instance over a private copy of the demo data."""

import shutil
from pathlib import Path

import dagster as dg
import pytest

from pipelines.backends.registry import not_runnable_reason
from pipelines.dagster.definitions import CHECKS, FAMILY_ASSETS, JOBS, build, defs
from pipelines.dagster.partitions import sync_evaluation_partitions
from pipelines.dagster.resources import MedbenchResource
from pipelines.engine.release import build_catalog
from support.plugins import specs as load_specs
from medbench.layout import DataDir

from support.paths import REPO  # noqa: E402
QA = FAMILY_ASSETS["clinicalqa"]
VLLM = "clinicalqa@0|google/medgemma-27b-text-it"
RANDOM = "clinicalqa@0|medbench/random"


@pytest.fixture
def data(demo_data, tmp_path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(demo_data, copy, ignore=shutil.ignore_patterns("dagster"))
    return copy


def _materialize(data: Path, instance, selection, partition=None, config=None):
    run_config = {"ops": {QA.predictions: {"config": config}, QA.metrics: {"config": config}}} if config else None
    return dg.materialize([*defs.assets, *CHECKS], selection=selection, partition_key=partition, instance=instance,
                          resources={"medbench": MedbenchResource(data_dir=str(data))}, raise_on_error=False,
                          run_config=run_config)


def _events(result, kind: str):
    return [e for e in result.all_events if e.event_type_value == kind]


def test_not_runnable_pair_is_skipped_with_its_reason_and_publishing_still_runs(data):
    if not_runnable_reason(load_specs().model("google/medgemma-27b-text-it")) is None:
        pytest.skip("the vLLM model can run on this machine")
    with dg.DagsterInstance.ephemeral() as instance:
        sync_evaluation_partitions(instance, load_specs())
        result = _materialize(data, instance, [QA.predictions, QA.metrics], VLLM)
        assert result.success  # not a red failure
        # Materialized as skipped (so a backfill over it ends green): the reason, no files, and a
        # data version that is not the run id.
        skips = [e.materialization for e in result.get_asset_materialization_events()]
        assert sorted(m.asset_key.to_user_string() for m in skips) == sorted([QA.predictions, QA.metrics])
        run_id = skips[0].metadata["run_id"].value
        for m in skips:
            assert m.partition == VLLM and m.metadata["evaluated"].value is False
            assert "cannot run here" in m.metadata["skipped_reason"].value
            assert m.tags["dagster/data_version"] == f"skipped:{run_id}"
        assert not (data / "artifacts" / run_id).exists()
        # Its checks say it did not run (warnings), never red.
        checks = [e.event_specific_data for e in _events(result, "ASSET_CHECK_EVALUATION")]
        assert checks and all(c.passed or c.severity == dg.AssetCheckSeverity.WARN for c in checks)
        published = _materialize(data, instance, ["published_warehouse"])
        assert published.success


def test_a_hand_typed_key_naming_no_pair_fails_at_once_with_one_line(data):
    bad = "clinicalqa@0|nobody/none"
    with dg.DagsterInstance.ephemeral() as instance:
        sync_evaluation_partitions(instance, load_specs())
        instance.add_dynamic_partitions("clinicalqa_evaluations", [bad])
        result = _materialize(data, instance, [QA.predictions, QA.metrics], bad)
        assert not result.success
        failure = next(e for e in result.all_events if e.is_step_failure)
        message = failure.step_failure_data.user_failure_data.description
        assert message == f"{bad} names no valid (task, model) pair in the specs: unknown model 'nobody/none'"
        # ... and the specs' sync removes it (the sensor returns the same diff as a request).
        sync_evaluation_partitions(instance, load_specs())
        assert bad not in instance.get_dynamic_partitions("clinicalqa_evaluations")


def test_metadata_carries_the_medbench_run_id_and_links(data, monkeypatch):
    monkeypatch.setenv("MEDBENCH_PUBLIC_URL", "https://medbench.example/")
    with dg.DagsterInstance.ephemeral() as instance:
        sync_evaluation_partitions(instance, load_specs())
        result = _materialize(data, instance, [QA.predictions, QA.metrics], RANDOM)
        assert result.success
        for mat in result.get_asset_materialization_events():
            meta = mat.materialization.metadata
            run = meta["run_id"].value
            assert meta["result_page"].value == f"https://medbench.example/r/{run}"
            assert isinstance(meta["path"], dg.PathMetadataValue) and meta["reused"].value is True


def _publish_requests(instance, cursor=None):
    sensor = defs.resolve_sensor_def("publish_on_new_results")
    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs)
    result = sensor.evaluate_tick(context)
    return result.run_requests, context.cursor


def test_publishing_follows_new_results_as_the_publish_job(data):
    """Issue #23: automatic publishes showed as ``__ASSET_JOB`` (what an asset's automation
    condition launches); the sensor now requests the named job ``publish``, once per update."""
    sensor = defs.resolve_sensor_def("publish_on_new_results")
    assert sensor.job_name == "publish" and sensor.default_status == dg.DefaultSensorStatus.RUNNING
    # No automation condition left on an asset, or Dagster adds its default sensor, whose runs are __ASSET_JOB.
    assert {s.name for s in defs.get_repository_def().sensor_defs} == {
        "publish_on_new_results", "evaluation_partitions_sensor", "dead_runs_sensor", "submissions",
        "submission_run_failures"}
    with dg.DagsterInstance.ephemeral() as instance:
        sync_evaluation_partitions(instance, load_specs())
        requests, cursor = _publish_requests(instance)
        assert requests == []  # nothing materialized yet
        assert _materialize(data, instance, [QA.predictions, QA.metrics], RANDOM).success
        requests, cursor = _publish_requests(instance, cursor)
        assert len(requests) == 1 and requests[0].job_name in (None, "publish")
        assert _publish_requests(instance, cursor)[0] == []  # once per update
        assert _materialize(data, instance, [QA.predictions, QA.metrics], RANDOM).success
        assert _materialize(data, instance, ["published_warehouse"]).success  # published since
        assert _publish_requests(instance, cursor)[0] == []


def test_jobs_are_named_with_descriptions():
    names = {j.name for j in JOBS}
    assert names == {"materialize_inputs", "evaluate_clinicalqa", "evaluate_vitaldb_ioh", "evaluate_clinicalqa_open",
                     "publish"}
    assert all(j.description for j in JOBS)
    assert defs.resolve_sensor_def("publish_on_new_results").description


def test_regenerate_moves_the_stored_raw_outputs_aside(data):
    generations = DataDir(data).root / "generations"
    before = sorted(generations.glob("*.jsonl"))
    assert before, "the demo stores raw outputs of its choice models"
    with dg.DagsterInstance.ephemeral() as instance:
        sync_evaluation_partitions(instance, load_specs())
        assert _materialize(data, instance, [QA.predictions, QA.metrics], RANDOM, {"force": True}).success
        assert sorted(generations.glob("*.jsonl")) == before  # force re-scores, keeps the outputs
        assert _materialize(data, instance, [QA.predictions, QA.metrics], RANDOM, {"regenerate": True}).success
    assert list(generations.glob("*.jsonl.discarded-*"))


def test_a_removed_model_spec_keeps_its_published_result_with_its_model_row(data, tmp_path):
    specs_dir = tmp_path / "specs"
    shutil.copytree(REPO / "specs", specs_dir)
    (specs_dir / "models" / "medbench" / "random.toml").unlink()
    catalog = build_catalog(load_specs(specs_dir), DataDir(data))
    random_results = [r for r in catalog.results if r.model.slug == "medbench/random"]
    assert random_results
    rows = {m["slug"]: m for m in catalog.models}
    assert "medbench/random" in rows and "spec removed" in rows["medbench/random"]["description"]
    assert build(load_specs(specs_dir))  # the code location still loads
