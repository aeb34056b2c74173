"""The proof that task families are plug-ins: ``tests/plugins/medbench_toyhospital``, a separately
installable distribution (its own ``pyproject.toml``: the dataset ``toyhospital`` read from CSV
files, the score family ``toyhospital-transfusion`` and the choice family ``toyhospital-anaemia``),
is ``pip install``-ed and its results reach ``medbench materialize``, the Dagster assets and
checks, ``/v1/leaderboard`` (rank intervals) and ``/v1/compare``, the result page and MCP, with no
file of the project changed for it.

Why installed into a folder of its own (``pip install --target``) and used only by subprocesses
whose ``PYTHONPATH`` names that folder: other tests iterate over the installed families, so the
distribution must not be visible to them; its entry points are found exactly where a user's
installed package's would be, through ``importlib.metadata``.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from medbench.registry import GROUPS
from support.live_server import medbench_serve
from support.paths import REPO

SOURCE = REPO / "tests" / "plugins" / "medbench_toyhospital"
SCORE, CHOICE = "toyhospital-transfusion", "toyhospital-anaemia"
FAMILIES = (SCORE, CHOICE)
MODELS = {SCORE: {"toyhospital/last-hb", "toyhospital/logreg-hb", "toyhospital/hgb-hb"},
          CHOICE: {"toyhospital/coin", "toyhospital/chart-reader"}}


# --------------------------------------------------------------------------- default lane: the package's metadata


def _entry_points() -> dict[str, dict[str, str]]:
    project = tomllib.loads((SOURCE / "pyproject.toml").read_text())["project"]
    return project["entry-points"]


def test_the_distribution_declares_its_plugins_in_medbench_entry_point_groups() -> None:
    """Every group it declares is one medbench reads, and each entry point names a class of the package."""
    declared = _entry_points()
    assert set(declared) <= set(GROUPS.values()), f"unknown groups: {set(declared) - set(GROUPS.values())}"
    assert set(declared[GROUPS["families"]]) == set(FAMILIES)
    assert set(declared[GROUPS["datasets"]]) == {"toyhospital"}
    for group in declared.values():
        for name, target in group.items():
            module, _, cls = target.partition(":")
            path = SOURCE / (module.replace(".", "/") + ".py")
            classes = {n.name: n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef)}
            assert cls in classes, f"{name}: {target} names no class of {path}"
            named = {t.id: ast.literal_eval(n.value) for n in classes[cls].body if isinstance(n, ast.Assign)
                     for t in n.targets if isinstance(t, ast.Name) and t.id in ("name", "slug")}
            assert name in named.values(), f"{target} is not named {name!r}: {named}"
    for family in FAMILIES:  # its specs ship as package data, under the layout of medbench's specs/
        assert (SOURCE / "medbench_toyhospital" / "specs" / "tasks" / family / "0.toml").is_file()


# --------------------------------------------------------------------------- slow lane: installed and run


@dataclass(frozen=True)
class Installed:
    site: Path        # where the distribution is installed (and nothing else)
    specs: Path       # the project's specs plus the distribution's
    data: Path        # a demo data directory materialized with them
    materialize: subprocess.CompletedProcess

    def env(self) -> dict[str, str]:
        """The environment of a process that has the distribution installed."""
        return {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.site), str(REPO)]),
                "MEDBENCH_SPECS": str(self.specs), "MEDBENCH_DATA": str(self.data),
                "DAGSTER_HOME": str(self.data / "dagster"), "PYTHONUNBUFFERED": "1"}

    def python(self, code: str) -> str:
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=self.env(), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("plugin")
    source = root / "src"  # a copy: building in the checkout would leave build/ and *.egg-info there
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--no-index", "--target", str(root / "site"), str(source)],
                         capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    specs = root / "specs"
    shutil.copytree(REPO / "specs", specs)
    shutil.copytree(root / "site" / "medbench_toyhospital" / "specs", specs, dirs_exist_ok=True)
    data = root / "data"
    partial = Installed(root / "site", specs, data, subprocess.CompletedProcess([], 0))
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "materialize", "--demo",
                           "--task", SCORE, "--task", CHOICE], cwd=REPO, env=partial.env(), capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    return Installed(partial.site, specs, data, proc)


@pytest.mark.slow
def test_materialize_runs_every_pair_of_the_installed_families(installed: Installed) -> None:
    ran = {tuple(line.split()[0].split("|")) for line in installed.materialize.stdout.splitlines()
           if len(line.split()) > 2 and line.split()[1] == "ran"}
    assert ran == {(f"{family}@0", model) for family, models in MODELS.items() for model in models}, \
        installed.materialize.stdout


@pytest.mark.slow
def test_the_code_location_has_their_assets_materialized_and_their_checks_evaluated(installed: Installed) -> None:
    """The Dagster code location (loaded with the distribution installed) defines the families'
    assets; the instance in the data directory holds every partition of them and a passing verdict
    of every one of their checks on every partition."""
    report = json.loads(installed.python("""
import json, os
import dagster as dg
from dagster._core.storage.event_log.base import PartitionKeyFilter
from pipelines.dagster.definitions import CHECKS, FAMILY_ASSETS
from pipelines.dagster.partitions import asset_prefix
out = {}
with dg.DagsterInstance.from_config(os.environ["DAGSTER_HOME"]) as instance:
    for family in %r:
        fa = FAMILY_ASSETS[family]
        keys = set(instance.get_dynamic_partitions(f"{asset_prefix(family)}_evaluations"))
        assets = {dg.AssetKey(fa.predictions), dg.AssetKey(fa.metrics)}
        checks = [k for c in CHECKS for k in c.check_keys if k.asset_key in assets]
        verdicts = {}
        for key in sorted(keys):
            latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
                checks, partition_filter=PartitionKeyFilter(key=key))
            verdicts[key] = sorted((k.name, r.event.dagster_event.event_specific_data.passed) for k, r in latest.items())
        out[family] = {"assets": [fa.predictions, fa.metrics], "partitions": sorted(keys),
                       "materialized": {a: sorted(instance.get_materialized_partitions(dg.AssetKey(a)))
                                        for a in (fa.predictions, fa.metrics)},
                       "checks": sorted(k.name for k in checks), "verdicts": verdicts}
print(json.dumps(out))
""" % (FAMILIES,)))
    for family in FAMILIES:
        got = report[family]
        prefix = family.replace("-", "_")
        assert got["assets"] == [f"{prefix}_predictions", f"{prefix}_metrics"]
        assert got["partitions"] == sorted(f"{family}@0|{m}" for m in MODELS[family])
        assert got["materialized"] == {asset: got["partitions"] for asset in got["assets"]}
        assert {"every_instance_predicted_once"} <= set(got["checks"])
        for key, verdicts in got["verdicts"].items():
            assert verdicts == [[name, True] for name in got["checks"]], (key, verdicts)


@pytest.fixture(scope="module")
def served(installed: Installed) -> Iterator[str]:
    with medbench_serve(installed.data, installed.data.parent / "serve.log", ready_path="/v1/openapi.json") as server:
        yield server.base


def _board(base: str, task: str) -> dict:
    response = httpx.get(f"{base}/v1/leaderboard", params={"task": task}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_the_leaderboard_ranks_their_results_with_rank_intervals(served: str, family: str) -> None:
    board = _board(served, f"{family}@0")
    rows = board["rows"]
    assert {r["model"]["slug"] for r in rows} == MODELS[family]
    for row in rows:
        assert isinstance(row["rank_low"], int) and isinstance(row["rank_high"], int), row
        assert 1 <= row["rank_low"] <= row["rank"] <= row["rank_high"] <= len(rows), row


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_compare_pairs_two_of_their_results(served: str, family: str) -> None:
    a, b = (r["run_id"] for r in _board(served, f"{family}@0")["rows"][:2])
    response = httpx.get(f"{served}/v1/compare", params={"a": a, "b": b}, timeout=60)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["task"] == f"{family}@0" and body["a"] == a and body["b"] == b and body["n_shared"] > 0
    assert body["ci_low"] <= body["difference"] <= body["ci_high"]
    if family == SCORE:  # resampled by the family's declared cluster column, named from it
        assert body["metric"] == "auroc" and "over" in body["method"] and "subjects" in body["method"]
    else:
        assert body["metric"] == "accuracy" and "McNemar" in body["method"]


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_the_result_page_shows_each_result(served: str, family: str) -> None:
    for row in _board(served, f"{family}@0")["rows"]:
        page = httpx.get(f"{served}/r/{row['run_id']}", timeout=30)
        assert page.status_code == 200 and row["model"]["name"] in page.text and "<svg" in page.text


@pytest.mark.slow
def test_mcp_answers_their_leaderboards(served: str) -> None:
    async def boards() -> dict[str, dict]:
        async with streamable_http_client(f"{served}/mcp") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return {f: (await session.call_tool("leaderboard", {"task": f"{f}@0"})).structured_content
                    for f in FAMILIES}

    answers = anyio.run(boards)
    for family in FAMILIES:
        assert answers[family] == _board(served, f"{family}@0")


@pytest.mark.slow
def test_only_a_process_that_has_it_installed_sees_it(installed: Installed) -> None:
    """Installed into its own folder: a process of the shared environment lists the built-ins only."""
    code = ("import json; from importlib.metadata import entry_points as e; "
            f"print(json.dumps({{g: sorted(p.name for p in e(group=g)) for g in {sorted(GROUPS.values())!r}}}))")
    builtin = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    plain = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(REPO)})
    seen = json.loads(plain.stdout)
    assert seen == {g: sorted(builtin[g]) for g in GROUPS.values()}
    with_it = json.loads(installed.python(code))
    assert with_it[GROUPS["families"]] == sorted([*builtin[GROUPS["families"]], *FAMILIES])
    assert with_it[GROUPS["datasets"]] == sorted([*builtin[GROUPS["datasets"]], "toyhospital"])


# The default-lane tests that enumerate families, datasets, backends or spec Structs: with the
# distribution installed (and its specs not added: installing is all it takes to add a family),
# each must still pass, because each enumerates the registry rather than pinning the built-ins.
ENUMERATING = ["tests/unit/pipelines/test_registry.py", "tests/unit/pipelines/test_specs.py",
               "tests/unit/pipelines/test_kinds.py", "tests/unit/pipelines/test_specs_cache.py",
               "tests/unit/pipelines/test_published_settings.py", "tests/unit/pipelines/test_redact_allow_list.py",
               "tests/e2e/test_dagster_definitions.py", "tests/e2e/test_toy_family.py"]


@pytest.mark.slow
def test_installing_it_breaks_no_test_that_enumerates_families(installed: Installed, tmp_path: Path) -> None:
    env = {k: v for k, v in installed.env().items() if k not in ("MEDBENCH_SPECS", "MEDBENCH_DATA", "DAGSTER_HOME")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                           "-m", "not slow", *ENUMERATING], cwd=REPO, env={**env, "TMPDIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:]
