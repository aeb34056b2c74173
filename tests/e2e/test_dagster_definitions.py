"""The code location loads where maintainers load it: `dagster definitions validate` and
`dagster asset materialize` on workspace.yaml / the definitions module."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from pipelines.dagster.definitions import CHECKS, FAMILY_ASSETS, defs
from pipelines.dagster.assets.inputs import instances_asset_name, snapshot_asset_name
from pipelines.dagster.partitions import (
    evaluation_keys, family_keys, metrics_asset_name, partitions_name, predictions_asset_name,
    sync_evaluation_partitions,
)
from pipelines.dagster.resources import MedbenchResource
from pipelines.dagster.sensors import evaluation_partitions_sensor
from support.plugins import builtin_plugins, specs as load_specs
from support.paths import REPO

DAGSTER = str(Path(sys.executable).with_name("dagster"))


def test_definitions_validate(tmp_path):
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    (tmp_path / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text())
    proc = subprocess.run([DAGSTER, "definitions", "validate", "-w", "workspace.yaml"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Validation successful" in proc.stdout + proc.stderr


REGISTERED = builtin_plugins().families.as_dict()  # whatever is installed: a plug-in family is checked alike
# The code location makes assets for the families whose dataset the specs define (definitions.build).
FAMILIES = {name: f for name, f in REGISTERED.items() if f.dataset in load_specs().datasets}
# The built-ins' names, pinned: a family's assets are derived from its name, dataset and instances file.
BUILTIN_ASSETS = {
    "clinicalqa": {"clinicalqa_snapshot", "clinicalqa_items", "clinicalqa_predictions", "clinicalqa_metrics"},
    "vitaldb-ioh": {"vitaldb_snapshot", "vitaldb_ioh_windows", "vitaldb_ioh_predictions", "vitaldb_ioh_metrics"},
}
BUILTIN_CHECKS = {
    "clinicalqa": {"clinicalqa_items:row_count_matches_spec", "clinicalqa_predictions:every_instance_predicted_once",
                   "clinicalqa_metrics:parse_rate_reasonable",  # choice families only: a score task has no parse rate
                   "clinicalqa_metrics:metrics_publishable"},
    "vitaldb-ioh": {"vitaldb_ioh_windows:subjects_in_one_split", "vitaldb_ioh_windows:label_prevalence_in_range",
                    "vitaldb_ioh_windows:both_classes_in_test", "vitaldb_ioh_predictions:every_instance_predicted_once",
                    "vitaldb_ioh_predictions:scores_finite", "vitaldb_ioh_metrics:metrics_publishable"},
}


def family_assets(family) -> set[str]:
    return {snapshot_asset_name(family.dataset), instances_asset_name(family), predictions_asset_name(family),
            metrics_asset_name(family)}


def family_checks(family) -> set[str]:
    instances, predictions = instances_asset_name(family), predictions_asset_name(family)
    out = {f"{instances}:{name}" for name in family.instance_check_names}
    out |= {f"{predictions}:{name}" for name in family.prediction_check_names}
    if family.kind == "choice":
        out.add(f"{metrics_asset_name(family)}:parse_rate_reasonable")
    out.add(f"{metrics_asset_name(family)}:metrics_publishable")  # every family: the validity gate
    return out


def test_builtin_families_are_registered():
    assert set(BUILTIN_ASSETS) <= set(FAMILIES)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_assets_are_named_for_their_data(name):
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert family_assets(FAMILIES[name]) <= keys
    if name in BUILTIN_ASSETS:
        assert family_assets(FAMILIES[name]) == BUILTIN_ASSETS[name]


def test_every_asset_belongs_to_a_family_or_is_the_warehouse():
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == set().union(*(family_assets(f) for f in FAMILIES.values())) | {"published_warehouse"}


def _parents(graph, name: str) -> set[str]:
    return {k.to_user_string() for k in graph.get(dg.AssetKey(name)).parent_keys}


def test_lineage_is_per_family():
    """No false lineage: a family's assets depend only on its own dataset and instances."""
    graph = defs.resolve_asset_graph()
    assert _parents(graph, "clinicalqa_items") == {"clinicalqa_snapshot"}
    assert _parents(graph, "vitaldb_ioh_windows") == {"vitaldb_snapshot"}
    assert _parents(graph, "clinicalqa_predictions") == {"clinicalqa_items"}
    assert _parents(graph, "vitaldb_ioh_predictions") == {"vitaldb_ioh_windows"}
    assert _parents(graph, "clinicalqa_metrics") == {"clinicalqa_predictions"}
    assert _parents(graph, "published_warehouse") == {metrics_asset_name(f) for f in FAMILIES.values()}
    assert {"clinicalqa_metrics", "vitaldb_ioh_metrics"} <= _parents(graph, "published_warehouse")
    parts = {name: graph.get(dg.AssetKey(name)).partitions_def for name in
             ("clinicalqa_predictions", "clinicalqa_metrics", "vitaldb_ioh_predictions", "vitaldb_ioh_metrics")}
    assert {p.name for p in parts.values()} == {"clinicalqa_evaluations", "vitaldb_ioh_evaluations"}
    assert parts["clinicalqa_predictions"] == parts["clinicalqa_metrics"]
    # Code versions come from the spec hashes: each family's own, the snapshots' from their dataset spec.
    versions = {k.to_user_string(): graph.get(k).code_version for k in graph.get_all_asset_keys()}
    assert versions["clinicalqa_items"] == versions["clinicalqa_predictions"] == versions["clinicalqa_metrics"]
    assert versions["clinicalqa_items"] != versions["vitaldb_ioh_windows"]
    assert versions["clinicalqa_snapshot"] and versions["vitaldb_snapshot"]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_checks_are_declared_with_descriptions(name):
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.asset_check_keys}
    assert family_checks(FAMILIES[name]) <= keys
    if name in BUILTIN_CHECKS:
        assert family_checks(FAMILIES[name]) == BUILTIN_CHECKS[name]
    specs = [spec for checks in CHECKS for spec in checks.check_specs]
    assert specs and all(spec.description for spec in specs)


def test_every_check_is_a_family_s():
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().asset_check_keys}
    assert keys == set().union(*(family_checks(f) for f in FAMILIES.values()))


def test_partitions_are_the_valid_pairs():
    keys = evaluation_keys(load_specs())
    assert "clinicalqa@0|medbench/random" in keys
    assert "vitaldb-ioh@0|medbench/neg-last-map" in keys
    assert "clinicalqa@0|medbench/neg-last-map" not in keys
    by_def = family_keys(load_specs())
    assert set(by_def) == {partitions_name(name) for name in REGISTERED}
    assert {"clinicalqa_evaluations", "vitaldb_ioh_evaluations"} <= set(by_def)
    assert all(k.startswith("clinicalqa@") for k in by_def["clinicalqa_evaluations"])
    assert all(k.startswith("vitaldb-ioh@") for k in by_def["vitaldb_ioh_evaluations"])


def test_sensor_returns_partition_requests_and_leaves_the_instance_alone():
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("clinicalqa_evaluations", ["clinicalqa@0|gone/model"])
        instance.add_dynamic_partitions("evaluations", ["clinicalqa@0|medbench/random"])  # the retired shared def
        result = evaluation_partitions_sensor(dg.build_sensor_context(instance=instance))
        assert isinstance(result, dg.SensorResult)
        requests = {(type(r).__name__, r.partitions_def_name): set(r.partition_keys)
                    for r in result.dynamic_partitions_requests}
        wanted = family_keys(load_specs())
        assert requests[("AddDynamicPartitionsRequest", "vitaldb_ioh_evaluations")] == set(wanted["vitaldb_ioh_evaluations"])
        assert requests[("AddDynamicPartitionsRequest", "clinicalqa_evaluations")] == set(wanted["clinicalqa_evaluations"])
        assert requests[("DeleteDynamicPartitionsRequest", "clinicalqa_evaluations")] == {"clinicalqa@0|gone/model"}
        assert requests[("DeleteDynamicPartitionsRequest", "evaluations")] == {"clinicalqa@0|medbench/random"}
        assert instance.get_dynamic_partitions("vitaldb_ioh_evaluations") == []  # the sensor only asked
        sync_evaluation_partitions(instance, load_specs())  # the CLI's path applies the same diff
        assert set(instance.get_dynamic_partitions("clinicalqa_evaluations")) == set(wanted["clinicalqa_evaluations"])
        again = evaluation_partitions_sensor(dg.build_sensor_context(instance=instance))
        assert not again.dynamic_partitions_requests and again.skip_reason


def _run_checks_alone(data, selection, partition=None) -> dict[str, bool]:
    """Execute only the given checks (no asset materializes), as the UI's "Execute" does."""
    with dg.DagsterInstance.ephemeral() as instance:
        sync_evaluation_partitions(instance, load_specs())
        job = dg.define_asset_job("checks_alone", selection=selection)
        local = dg.Definitions(assets=defs.assets, asset_checks=CHECKS, jobs=[job],
                               resources={"medbench": MedbenchResource(data_dir=str(data))})
        result = local.resolve_job_def("checks_alone").execute_in_process(
            instance=instance, tags={"dagster/partition": partition} if partition else None)
        assert result.success
        assert not result.get_asset_materialization_events()
        evaluations = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
        return {f"{ev.asset_key.to_user_string()}:{ev.check_name}": ev.passed for ev in evaluations}


def test_instance_checks_rerun_alone(demo_data):
    got = _run_checks_alone(demo_data, dg.AssetSelection.checks_for_assets(
        FAMILY_ASSETS["clinicalqa"].instances, FAMILY_ASSETS["vitaldb-ioh"].instances))
    assert got == {"clinicalqa_items:row_count_matches_spec": True, "vitaldb_ioh_windows:subjects_in_one_split": True,
                   "vitaldb_ioh_windows:label_prevalence_in_range": True, "vitaldb_ioh_windows:both_classes_in_test": True}


@pytest.mark.parametrize("family,partition,expected", [
    ("vitaldb-ioh", "vitaldb-ioh@0|medbench/neg-last-map",
     {"vitaldb_ioh_predictions:every_instance_predicted_once": True, "vitaldb_ioh_predictions:scores_finite": True,
      "vitaldb_ioh_metrics:metrics_publishable": True}),
    ("clinicalqa", "clinicalqa@0|medbench/random",
     {"clinicalqa_predictions:every_instance_predicted_once": True, "clinicalqa_metrics:parse_rate_reasonable": True,
      "clinicalqa_metrics:metrics_publishable": True}),
])
def test_evaluation_checks_rerun_alone_per_partition(demo_data, family, partition, expected):
    fa = FAMILY_ASSETS[family]
    got = _run_checks_alone(demo_data, dg.AssetSelection.checks_for_assets(fa.predictions, fa.metrics), partition)
    assert got == expected


def test_dagster_asset_materialize_cli(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "KIND").write_text("demo\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home), "MEDBENCH_DATA": str(data)}
    proc = subprocess.run([DAGSTER, "asset", "materialize", "-m", "pipelines.dagster.definitions", "-a", "defs",
                           "--select", "clinicalqa_snapshot"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (data / "snapshots" / "clinicalqa" / "CURRENT").exists()
