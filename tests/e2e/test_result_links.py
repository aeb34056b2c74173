"""The ``result_page`` link on an evaluation's Dagster metadata points where the site is served
(issue #23: they pointed at :8000 when ``medbench demo --port 18900`` served on 18900):
MEDBENCH_PUBLIC_URL, else the port ``medbench demo`` serves on, else ``medbench serve``'s default."""

from __future__ import annotations

import shutil

import dagster as dg
import pytest
from support.commands import run_medbench

from pipelines.dagster import engine_calls as engine
from pipelines.dagster.assets.evaluation_records import run_links
from support.plugins import specs as load_specs
from medbench.layout import DataDir

WORK = "vitaldb-ioh@0|medbench/neg-last-map"


def test_the_link_base_is_the_public_url_else_the_served_port_else_the_default(monkeypatch):
    monkeypatch.delenv("MEDBENCH_PUBLIC_URL", raising=False)
    monkeypatch.delenv("MEDBENCH_SITE_URL", raising=False)
    assert run_links("abc")["result_page"].value == "http://127.0.0.1:8000/r/abc"
    monkeypatch.setenv("MEDBENCH_SITE_URL", "http://127.0.0.1:18900")
    assert run_links("abc")["result_page"].value == "http://127.0.0.1:18900/r/abc"
    monkeypatch.setenv("MEDBENCH_PUBLIC_URL", "https://medbench.example/")
    assert run_links("abc")["result_page"].value == "https://medbench.example/r/abc"


@pytest.mark.slow
def test_medbench_demo_links_its_results_on_the_port_it_serves(demo_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(demo_data, data, ignore=shutil.ignore_patterns("dagster"))
    run = engine.resolve_evaluation(load_specs(), DataDir(data), *engine.split_partition_key(WORK)).run_id
    (data / "artifacts" / run / "result.json").unlink()  # so the demo runs it (a reuse records no link)
    proc = run_medbench("demo", "--no-serve", "--port", "18900", data=data,
                        env={"MEDBENCH_PUBLIC_URL": "", "MEDBENCH_SITE_URL": ""})
    assert "serve it: medbench serve --port 18900" in proc.stdout  # the address carries over (issue #40)
    assert "\nexport MEDBENCH_API_URL=http://127.0.0.1:18900 " in proc.stdout, proc.stdout[-2000:]
    # the summary only: Dagster's lines go to the log file the summary names (issue #40)
    assert " - dagster - " not in proc.stdout + proc.stderr and "INFO" not in proc.stdout + proc.stderr, proc.stdout[:3000]
    log = data / "logs" / "demo.log"
    assert f"Dagster's log of this materialization: {log}" in proc.stdout and log.stat().st_size > 0
    with dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
        rec = instance.fetch_materializations(dg.AssetRecordsFilter(
            asset_key=dg.AssetKey("vitaldb_ioh_metrics"), asset_partitions=[WORK]), limit=1).records[0]
    assert rec.asset_materialization.metadata["result_page"].value == f"http://127.0.0.1:18900/r/{run}"
