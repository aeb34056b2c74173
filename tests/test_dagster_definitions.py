"""The code location loads where maintainers load it: `dagster definitions validate` and
`dagster asset materialize` on workspace.yaml / the definitions module."""

import os
import subprocess
import sys
from pathlib import Path

from pipelines.dagster.definitions import defs
from pipelines.dagster.partitions import evaluation_keys
from pipelines.engine.specs import load_specs

REPO = Path(__file__).resolve().parent.parent
DAGSTER = str(Path(sys.executable).with_name("dagster"))


def test_definitions_validate(tmp_path):
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    (tmp_path / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text())
    proc = subprocess.run([DAGSTER, "definitions", "validate", "-w", "workspace.yaml"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Validation successful" in proc.stdout + proc.stderr


def test_assets_are_named_for_their_data():
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {"clinicalqa_snapshot", "vitaldb_snapshot", "clinicalqa_items", "vitaldb_ioh_windows",
                    "predictions", "metrics", "published_warehouse"}


def test_partitions_are_the_valid_pairs():
    keys = evaluation_keys(load_specs())
    assert "clinicalqa@0|medbench/random" in keys
    assert "vitaldb-ioh@0|medbench/neg-last-map" in keys
    assert "clinicalqa@0|medbench/neg-last-map" not in keys


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
