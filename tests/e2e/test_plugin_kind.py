"""The proof that kinds are plug-ins: ``tests/plugins/medbench_potassium``, a separately installable
distribution with a new warehouse kind (``regression``: MAE, RMSE and bias with cluster-bootstrap
intervals; lower is better), a dataset read from FHIR R4 NDJSON (``fhirward``), the family
``potassium-next``, its own backend (``forecast``) and three models, is ``pip install``-ed and
followed through ``medbench materialize``, the Dagster assets and checks, ``/v1/leaderboard``
(lowest MAE ranked 1, the rank sets in that order), ``/v1/compare``, the task and result pages with
their declared figure, MCP, DuckDB's ``predictions_regression`` and ``medbench verify``, with no file
of the project changed for it (docs/adding-a-task.md, "A new kind"). Its spec files come by its
``medbench.specs`` entry point: no ``MEDBENCH_SPECS`` folder merges them with the project's.

As with the first plug-in (``test_plugin_distribution.py``), it is installed into a folder of its
own and used only by subprocesses whose ``PYTHONPATH`` names that folder, so no other test sees it.
Its editable install (``pip install -e``) goes into a throwaway venv of its own instead, since only
a site folder (not ``PYTHONPATH``) runs the ``.pth`` hook that makes an editable install importable.
"""

from __future__ import annotations

import ast
import html
import json
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import anyio
import duckdb
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from medbench.registry import GROUPS, SPECS_GROUP
from support.live_server import medbench_serve
from support.paths import REPO

SOURCE = REPO / "tests" / "plugins" / "medbench_potassium"
FAMILY, TASK = "potassium-next", "potassium-next@0"
MODELS = {"potassium/last-value", "potassium/recent-mean", "potassium/damped"}


def test_the_distribution_declares_a_kind_and_its_plugins_in_medbench_groups() -> None:
    """Every group it declares is one medbench reads, and each entry point names a class of the package."""
    declared = tomllib.loads((SOURCE / "pyproject.toml").read_text())["project"]["entry-points"]
    assert set(declared) == {GROUPS["kinds"], GROUPS["datasets"], GROUPS["families"], GROUPS["backends"], SPECS_GROUP}
    assert declared[SPECS_GROUP] == {"potassium": "medbench_potassium:specs_dir"}
    assert declared[GROUPS["kinds"]] == {"regression": "medbench_potassium.kind:Regression"}
    for group in (g for name, g in declared.items() if name != SPECS_GROUP):
        for name, target in group.items():
            module, _, cls = target.partition(":")
            path = SOURCE / (module.replace(".", "/") + ".py")
            classes = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef)}
            assert cls in classes, f"{name}: {target} names no class of {path}"


@dataclass(frozen=True)
class Installed:
    site: Path
    data: Path
    materialize: subprocess.CompletedProcess

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "MEDBENCH_SPECS"}  # its specs come by entry point
        return {**env, "PYTHONPATH": os.pathsep.join([str(self.site), str(REPO)]), "MEDBENCH_DATA": str(self.data),
                "DAGSTER_HOME": str(self.data / "dagster"), "PYTHONUNBUFFERED": "1"}

    def run(self, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=REPO, env=self.env(), capture_output=True, text=True,
                              timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("plugin-kind")
    source = root / "src"
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    before = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--no-index", "--target", str(root / "site"), str(source)],
                         capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    partial = Installed(root / "site", root / "data", subprocess.CompletedProcess([], 0))
    proc = partial.run("-m", "pipelines.cli.main", "materialize", "--demo", "--task", FAMILY, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    after = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout
    assert after == before, "installing and running the plug-in changed a file of the project"
    return Installed(partial.site, partial.data, proc)


@pytest.mark.slow
def test_materialize_runs_every_model_and_the_dagster_checks_pass(installed: Installed) -> None:
    ran = {line.split()[0] for line in installed.materialize.stdout.splitlines()
           if len(line.split()) > 2 and line.split()[1] == "ran"}
    assert ran == {f"{TASK}|{m}" for m in MODELS}, installed.materialize.stdout
    proc = installed.run("-c", """
import json, os
import dagster as dg
from dagster._core.storage.event_log.base import PartitionKeyFilter
from pipelines.dagster.definitions import CHECKS, FAMILY_ASSETS
from pipelines.dagster.partitions import asset_prefix
fa = FAMILY_ASSETS[%r]
with dg.DagsterInstance.from_config(os.environ["DAGSTER_HOME"]) as instance:
    keys = sorted(instance.get_dynamic_partitions(f"{asset_prefix(%r)}_evaluations"))
    assets = {dg.AssetKey(fa.predictions), dg.AssetKey(fa.metrics)}
    checks = [k for c in CHECKS for k in c.check_keys if k.asset_key in assets]
    verdicts = {}
    for key in keys:
        latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            checks, partition_filter=PartitionKeyFilter(key=key))
        verdicts[key] = sorted((k.name, r.event.dagster_event.event_specific_data.passed) for k, r in latest.items())
    materialized = sorted(instance.get_materialized_partitions(dg.AssetKey(fa.metrics)))
print(json.dumps({"keys": keys, "checks": sorted(k.name for k in checks), "verdicts": verdicts,
                  "materialized": materialized}))
""" % (FAMILY, FAMILY))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["keys"] == got["materialized"] == sorted(f"{TASK}|{m}" for m in MODELS)
    assert {"every_instance_predicted_once", "predictions_finite"} <= set(got["checks"])
    for key, verdicts in got["verdicts"].items():
        assert verdicts == [[name, True] for name in got["checks"]], (key, verdicts)


@pytest.fixture(scope="module")
def served(installed: Installed):
    env = {"PYTHONPATH": installed.env()["PYTHONPATH"]}
    with medbench_serve(installed.data, installed.data.parent / "serve.log", ready_path="/v1/openapi.json",
                        env=env) as server:
        yield server.base


def _board(base: str) -> dict:
    response = httpx.get(f"{base}/v1/leaderboard", params={"task": TASK}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.slow
def test_the_lowest_mae_ranks_first_with_rank_sets_in_that_order(served: str) -> None:
    board = _board(served)
    rows = board["rows"]
    assert board["metric"] == "mae" and {r["model"]["slug"] for r in rows} == MODELS
    values = [r["metric"]["value"] for r in rows]
    assert values == sorted(values) and rows[0]["metric"]["direction"] == "lower"
    assert [r["rank"] for r in rows] == [1, 2, 3] and rows[0]["tied_with_leader"] is True
    for row in rows:
        assert 1 <= row["rank_low"] <= row["rank"] <= row["rank_high"] <= len(rows), row
    assert [r["rank_low"] for r in rows] == sorted(r["rank_low"] for r in rows)
    assert [r["rank_high"] for r in rows] == sorted(r["rank_high"] for r in rows)
    assert "MAE (lower is better)" in board["rank_method"]
    metrics = httpx.get(f"{served}/v1/results/{rows[0]['run_id']}", timeout=30).json()["metrics"]
    assert [(m["name"], m["direction"]) for m in metrics] == [("mae", "lower"), ("rmse", "lower"), ("bias", "target")]
    assert all(m["ci_low"] <= m["value"] <= m["ci_high"] for m in metrics)


@pytest.mark.slow
def test_compare_reads_better_as_lower(served: str) -> None:
    rows = _board(served)["rows"]
    a, b = rows[0]["run_id"], rows[-1]["run_id"]
    body = httpx.get(f"{served}/v1/compare", params={"a": a, "b": b}, timeout=60).json()
    assert body["metric"] == "mae" and body["direction"] == "lower" and body["n_shared"] > 0
    assert body["difference"] < 0 and body["ci_low"] <= body["difference"] <= body["ci_high"]
    assert "patients" in body["method"]
    assert body["better"] == ("a" if body["ci_high"] < 0 else None)


@pytest.mark.slow
def test_the_task_and_result_pages_show_the_declared_figure_and_flow(served: str) -> None:
    task = httpx.get(f"{served}/tasks/{FAMILY}", timeout=30)
    assert task.status_code == 200 and 'id="participant-flow"' in task.text
    assert "measurements with enough history" in task.text and "score task" not in task.text
    flow = httpx.get(f"{served}/v1/tasks/{FAMILY}", timeout=30).json()["participant_flow"]
    assert [s["label"] for s in flow] == ["measurements with enough history", "train", "test"]
    for row in _board(served)["rows"]:
        page = httpx.get(f"{served}/r/{row['run_id']}", timeout=30)
        assert page.status_code == 200 and row["model"]["name"] in html.unescape(page.text)
        assert '<figure class="picture" id="predicted-vs-observed">' in page.text
        for wrong in ("score task", "ROC curve", "Windows", "Subjects"):
            assert wrong not in page.text, wrong
        figures = httpx.get(f"{served}/v1/results/{row['run_id']}", timeout=30).json()["figures"]
        assert [f["id"] for f in figures] == ["predicted-vs-observed"] and figures[0]["series"][0]["x"]
    home = httpx.get(f"{served}/", timeout=30).text
    leader = _board(served)["rows"][0]
    assert f'href="/r/{leader["run_id"]}"' in home


@pytest.mark.slow
def test_mcp_answers_the_same_leaderboard(served: str) -> None:
    async def board() -> dict:
        async with streamable_http_client(f"{served}/mcp") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return (await session.call_tool("leaderboard", {"task": TASK})).structured_content

    assert anyio.run(board) == _board(served)


@pytest.mark.slow
def test_duckdb_has_a_typed_regression_table_in_the_view(installed: Installed) -> None:
    con = duckdb.connect(str(installed.data / "medbench.duckdb"), read_only=True)
    try:
        types = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                 "WHERE table_name = 'predictions_regression'").fetchall())
        n = con.execute("SELECT count(*), count(DISTINCT run_id) FROM predictions_regression").fetchone()
        in_view = con.execute("SELECT count(*) FROM predictions WHERE observed IS NOT NULL").fetchone()[0]
        ranked = [r[0] for r in con.execute(
            "SELECT r.model_slug FROM leaderboard_ranks k JOIN results r USING (run_id) WHERE k.task = ? "
            "AND k.model_type = '' AND k.metric = 'mae' ORDER BY k.rank", [TASK]).fetchall()]
        by_value = [r[0] for r in con.execute(
            "SELECT model_slug FROM results WHERE task = ? ORDER BY metric_value", [TASK]).fetchall()]
    finally:
        con.close()
    assert types["observed"] == "DOUBLE" and types["predicted"] == "DOUBLE" and "label" not in types
    assert n[1] == len(MODELS) and n[0] > 0 and in_view == n[0]
    assert ranked == by_value


@pytest.mark.slow
def test_verify_accepts_every_result(installed: Installed, served: str) -> None:
    """Offline, against the data directory's own key pinned by its fingerprint (unpinned, a key read
    from the directory being verified proves nothing and verify exits 4, as for the demo)."""
    from warehouse.keys import read_keys
    from medbench.layout import DataDir

    fingerprint = read_keys(DataDir(installed.data))[-1].fingerprint
    for row in _board(served)["rows"]:
        proc = installed.run("-m", "pipelines.cli.main", "verify", row["run_id"], "--offline", str(installed.data),
                             "--trusted-keys", fingerprint)
        assert proc.returncode == 0 and "valid: result" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_changing_one_line_of_the_plugin_changes_its_run_ids(installed: Installed, served: str) -> None:
    """Plug-in code is in the identity: its results record it (``versions.plugins``), and an edit of
    one line of the installed package (as it is on disk) gives new run ids, nothing reused. Runs
    last: it edits the installed copy and re-materializes."""
    before = {r["model"]["slug"]: r["run_id"] for r in _board(served)["rows"]}
    record = httpx.get(f"{served}/v1/results/{before['potassium/damped']}", timeout=30).json()
    (plugin,) = record["versions"]["plugins"]
    assert plugin["name"] == "medbench-potassium" and plugin["version"] == "0.1.0" and len(plugin["files_sha256"]) == 64
    backend = installed.site / "medbench_potassium" / "backend.py"
    backend.write_text(backend.read_text().replace("class Forecaster:", "class Forecaster:  # edited in place", 1))
    proc = installed.run("-m", "pipelines.cli.main", "materialize", "--demo", "--task", FAMILY, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = [line.split() for line in proc.stdout.splitlines() if len(line.split()) > 2 and "|" in line.split()[0]]
    assert {(parts[0], parts[1]) for parts in lines} == {(f"{TASK}|{m}", "ran") for m in MODELS}, proc.stdout
    after = {parts[0].partition("|")[2]: parts[2] for parts in lines}
    assert set(after) == set(before) and all(after[m] != before[m] for m in before), (before, after)


def _materialized(proc: subprocess.CompletedProcess) -> dict[str, tuple[str, str]]:
    """model -> (what happened: ran / reused, run id), from ``medbench materialize``'s lines."""
    lines = [line.split() for line in proc.stdout.splitlines() if len(line.split()) > 2 and "|" in line.split()[0]]
    return {parts[0].partition("|")[2]: (parts[1], parts[2]) for parts in lines if parts[0].startswith(TASK + "|")}


@pytest.mark.slow
def test_changing_one_line_of_an_editable_install_changes_its_run_ids(tmp_path: Path) -> None:
    """The same rule for ``pip install -e``: the package is imported from its source folder and its
    ``RECORD`` lists only the editable hook, so the hash must read the files on disk. An edit of one
    line of the source gives new run ids, nothing reused."""
    source = tmp_path / "src"
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # the venv sees this environment's packages (pip, setuptools, dagster...), so nothing is downloaded
    (site / "medbench-test-env.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    pip = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                          "--editable", str(source)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("MEDBENCH_SPECS", "PYTHONPATH")}
    env |= {"PYTHONPATH": str(REPO), "MEDBENCH_DATA": str(tmp_path / "data"),
            "DAGSTER_HOME": str(tmp_path / "data" / "dagster"), "PYTHONUNBUFFERED": "1"}

    def run(*args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run([python, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        return proc

    where = run("-c", "import medbench_potassium.backend as b; print(b.__file__)").stdout.strip()
    assert Path(where) == source / "medbench_potassium" / "backend.py"  # editable: read from the source folder
    (record,) = site.glob("medbench_potassium-*.dist-info/RECORD")
    assert "backend.py" not in record.read_text()  # what a RECORD-based hash would miss

    before = _materialized(run("-m", "pipelines.cli.main", "materialize", "--demo", "--task", FAMILY))
    assert set(before) == MODELS and {status for status, _ in before.values()} == {"ran"}, before
    backend = source / "medbench_potassium" / "backend.py"
    backend.write_text(backend.read_text().replace("class Forecaster:", "class Forecaster:  # edited in place", 1))
    after = _materialized(run("-m", "pipelines.cli.main", "materialize", "--demo", "--task", FAMILY))
    assert set(after) == MODELS and {status for status, _ in after.values()} == {"ran"}, after
    assert all(after[m][1] != before[m][1] for m in MODELS), (before, after)
