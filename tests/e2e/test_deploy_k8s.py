"""deploy/k8s/ checked against dagster-k8s's own config schemas (there is no cluster here): the
instance's K8sRunLauncher config, the k8s_job_executor run config with GPU requests per step, and the
`dagster-k8s/config` run tag. Also the production instance files parse as Dagster instance config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from support.paths import REPO

DEPLOY = REPO / "deploy"
ENV = {"MEDBENCH_PG_HOST": "postgres.medbench.svc", "MEDBENCH_PG_PORT": "5432", "MEDBENCH_PG_USER": "medbench",
       "MEDBENCH_PG_PASSWORD": "secret", "MEDBENCH_PG_DB": "medbench", "MEDBENCH_IMAGE": "registry/medbench:1"}


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)


def _process(config_type, value):
    from dagster._config import process_config

    result = process_config(config_type, value)
    assert result.success, [e.message for e in result.errors]
    return result.value


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("name", ["dagster.yaml", "k8s/dagster.yaml"])
def test_instance_files_are_valid_dagster_instance_config(name, tmp_path):
    from dagster._core.instance.config import dagster_instance_config

    (tmp_path / "dagster.yaml").write_text((DEPLOY / name).read_text())
    config, _ = dagster_instance_config(str(tmp_path))
    assert config["storage"]["postgres"]["postgres_db"]["db_name"] == {"env": "MEDBENCH_PG_DB"}
    assert (config["run_coordinator"]["module"], config["run_coordinator"]["class"]) == (
        "pipelines.dagster.run_coordinator", "PoolTaggingRunCoordinator")
    # A limit per pool, on the tag the coordinator puts on every evaluation run, and one run per partition.
    limits = {(e["key"], str(e["value"])): e["limit"] for e in config["concurrency"]["runs"]["tag_concurrency_limits"]}
    assert {v for k, v in limits if k == "medbench/pool"} == {"gpu", "api", "cpu"}
    assert any(k == "dagster/partition" and limit == 1 for (k, _), limit in limits.items())


def test_storage_and_coordinator_match_their_classes():
    from dagster._core.run_coordinator import QueuedRunCoordinator
    from dagster_postgres import DagsterPostgresStorage

    from pipelines.dagster.run_coordinator import PoolTaggingRunCoordinator

    assert issubclass(PoolTaggingRunCoordinator, QueuedRunCoordinator)  # the daemon's isinstance checks

    for name in ("dagster.yaml", "k8s/dagster.yaml"):
        cfg = _load(DEPLOY / name)
        storage = _process(DagsterPostgresStorage.config_type(), cfg["storage"]["postgres"])
        assert storage["postgres_db"]["hostname"] == ENV["MEDBENCH_PG_HOST"]
        assert storage["postgres_db"]["port"] == 5432
        _process(PoolTaggingRunCoordinator.config_type(), cfg["run_coordinator"]["config"])


def test_k8s_run_launcher_config_matches_the_schema():
    from dagster_k8s import K8sRunLauncher

    cfg = _load(DEPLOY / "k8s" / "dagster.yaml")["run_launcher"]
    assert (cfg["module"], cfg["class"]) == ("dagster_k8s", "K8sRunLauncher")
    value = _process(K8sRunLauncher.config_type(), cfg["config"])
    assert value["job_image"] == ENV["MEDBENCH_IMAGE"]
    assert value["volumes"][0]["persistentVolumeClaim"]["claimName"] == "medbench-data"


def test_k8s_executor_config_asks_for_a_gpu_for_llm_predictions():
    from dagster_k8s import k8s_job_executor

    cfg = _load(DEPLOY / "k8s" / "executor.yaml")["execution"]["config"]
    value = _process(k8s_job_executor.config_schema.config_type, cfg)
    gpu = value["per_step_k8s_config"]["clinicalqa_predictions"]["container_config"]["resources"]["limits"]
    assert gpu["nvidia.com/gpu"] == "1"
    # The step keys it names are the evaluation assets' steps.
    from pipelines.dagster.definitions import FAMILY_ASSETS

    assert set(value["per_step_k8s_config"]) <= {fa.predictions for fa in FAMILY_ASSETS.values()}


def test_a_bad_executor_config_is_refused():
    from dagster._config import process_config
    from dagster_k8s import k8s_job_executor

    bad = {"per_step_k8s_config": {"x": {"container_config": "not a mapping"}}}
    assert not process_config(k8s_job_executor.config_schema.config_type, bad).success


def test_gpu_run_tag_is_what_dagster_k8s_reads():
    from dagster_k8s.job import USER_DEFINED_K8S_CONFIG_KEY, get_user_defined_k8s_config

    tags = _load(DEPLOY / "k8s" / "gpu-run-tags.yaml")
    config = get_user_defined_k8s_config({k: json.dumps(v) for k, v in tags.items()})
    assert USER_DEFINED_K8S_CONFIG_KEY in tags
    assert config.container_config["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert config.pod_spec_config["node_selector"] == {"medbench/pool": "gpu"}
