"""``medbench`` against a real ``medbench serve`` over the demo warehouse (slow lane).

``eval`` on an evaluated pair must run nothing: no Dagster run is added to the data directory's
instance and no file under it changes. ``eval`` on a new pair (a model spec added in a copy of the
specs) materializes exactly that partition, publishes it, and the running server then answers
the lookup with it. ``reproduce`` re-makes a demo result from scratch and finds it identical, and
refuses, naming the spec, when the local specs differ. Client exit codes 0/1/2/3 end to end.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.paths import REPO
from support.commands import run_medbench
from support.serving import closed_port, serve_process

pytestmark = pytest.mark.slow


def dagster_runs(data: Path) -> int:
    con = sqlite3.connect(f"file:{data / 'dagster' / 'history' / 'runs.db'}?mode=ro", uri=True)
    try:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        con.close()


def files_state(data: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of every file of the data directory but the service's reuse store and SQLite's
    shared-memory and write-ahead files (reading the run count touches them)."""
    return {str(p.relative_to(data)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in data.rglob("*") if p.is_file() and "state" not in p.relative_to(data).parts
            and not p.name.endswith(("-shm", "-wal"))}


@pytest.fixture(scope="module")
def demo_api(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_process(demo_data, tmp_path_factory.mktemp("logs") / "serve.log") as base:
        yield base


def _copy_of(data: Path, target: Path) -> Path:
    shutil.copytree(data, target, symlinks=True, ignore=shutil.ignore_patterns("state"))
    return target


def _specs_with_new_model(target: Path) -> Path:
    shutil.copytree(REPO / "specs", target)
    spec = (REPO / "specs" / "models" / "medbench" / "random.toml").read_text()
    spec = (spec.replace('slug = "medbench/random"', 'slug = "medbench/random-seven"')
                .replace('provider_model_id = "random"', 'provider_model_id = "random-seven"')
                .replace('name = "Uniform random choice"', 'name = "Uniform random choice, seed 7"')
                .replace("seed = 20261029", "seed = 7"))
    assert "random-seven" in spec and "seed = 7" in spec
    (target / "models" / "medbench" / "random-seven.toml").write_text(spec)
    return target


def test_client_exit_codes_on_the_demo(demo_api: str, demo_data: Path, tmp_path: Path) -> None:
    found = run_medbench("lookup", "random", "clinicalqa@0", "--api-url", demo_api, "--json", data=demo_data, check=False)
    assert found.returncode == 0 and json.loads(found.stdout)["status"] == "evaluated"
    missing = run_medbench("result", "0123456789ab", "--api-url", demo_api, data=demo_data, check=False)
    assert missing.returncode == 1 and "run_not_found" in missing.stderr
    usage = run_medbench("leaderboard", "clinicalqa", "--limit", "5000", "--api-url", demo_api, data=demo_data,
                         check=False)
    assert usage.returncode == 2 and "invalid_parameter" in usage.stderr
    down = run_medbench("stats", "--api-url", f"http://127.0.0.1:{closed_port()}", data=demo_data, check=False)
    assert down.returncode == 3 and "cannot reach" in down.stderr
    run = json.loads(found.stdout)["result"]["run_id"]
    target = tmp_path / "p.parquet"
    got = run_medbench("predictions", run, "-o", str(target), "--api-url", demo_api, data=demo_data)
    assert "matches the published checksum" in got.stdout and target.stat().st_size > 0


def test_eval_of_an_evaluated_pair_runs_nothing(demo_api: str, demo_data: Path) -> None:
    runs_before, files_before = dagster_runs(demo_data), files_state(demo_data)
    text = run_medbench("eval", "medbench/random", "clinicalqa@0", "--api-url", demo_api, data=demo_data)
    assert "already evaluated" in text.stdout and "nothing was run" in text.stdout
    as_json = run_medbench("eval", "random", "clinicalqa", "--api-url", demo_api, "--json", data=demo_data)
    body = json.loads(as_json.stdout)
    assert body["status"] == "already_evaluated" and body["ran"] is False
    assert body["result"]["model"]["slug"] == "medbench/random"
    assert dagster_runs(demo_data) == runs_before
    assert files_state(demo_data) == files_before


def test_eval_with_the_api_down_uses_the_local_warehouse(demo_data: Path) -> None:
    runs_before = dagster_runs(demo_data)
    out = run_medbench("eval", "neg-last-map", "vitaldb-ioh@0", "--api-url", f"http://127.0.0.1:{closed_port()}",
                       data=demo_data)
    assert "cannot reach the medbench API" in out.stdout and "already evaluated (local warehouse)" in out.stdout
    assert dagster_runs(demo_data) == runs_before


def test_eval_of_a_new_pair_materializes_and_publishes_it(demo_data: Path, tmp_path: Path) -> None:
    data = _copy_of(demo_data, tmp_path / "data")
    specs = _specs_with_new_model(tmp_path / "specs")
    env = {"MEDBENCH_SPECS": str(specs)}
    with serve_process(data, tmp_path / "serve.log") as api:
        assert httpx.get(f"{api}/v1/lookup", params={"model": "random-seven", "task": "clinicalqa@0"}).json() == {
            "status": "not_evaluated", "result": None}
        runs_before = dagster_runs(data)
        out = run_medbench("eval", "random-seven", "clinicalqa@0", "--api-url", api, data=data, env=env)
        assert "not evaluated" in out.stdout and "evaluated medbench/random-seven on clinicalqa@0: run " in out.stdout
        run = out.stdout.split("evaluated medbench/random-seven on clinicalqa@0: run ")[1][:12]
        assert f"DuckDB file   {data / 'medbench.duckdb'}" in out.stdout
        assert dagster_runs(data) > runs_before
        assert (data / "artifacts" / run / "result.json").exists()
        deadline = time.monotonic() + 20
        while True:  # the running server notices the new publish by itself
            found = httpx.get(f"{api}/v1/lookup", params={"model": "random-seven", "task": "clinicalqa@0"}).json()
            if found["status"] == "evaluated" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert found["status"] == "evaluated" and found["result"]["run_id"] == run
        runs_after = dagster_runs(data)
        again = run_medbench("eval", "random-seven", "clinicalqa@0", "--api-url", api, data=data, env=env)
        assert "already evaluated" in again.stdout and dagster_runs(data) == runs_after


def test_reproduce_a_demo_result_is_identical(demo_api: str, demo_data: Path) -> None:
    run = httpx.get(f"{demo_api}/v1/lookup", params={"model": "medbench/random", "task": "clinicalqa@0"}).json()[
        "result"]["run_id"]
    out = run_medbench("reproduce", run, "--api-url", demo_api, data=demo_data)
    assert "predictions sha256  identical" in out.stdout and "metrics             identical" in out.stdout
    assert out.stdout.rstrip().endswith("IDENTICAL")
    local = run_medbench("reproduce", run, "--api-url", f"http://127.0.0.1:{closed_port()}", "--json", data=demo_data)
    report = json.loads(local.stdout)
    assert report["identical"] is True and report["differences"] == [] and report["scratch"] is None
    assert "local warehouse" in local.stderr


def test_reproduce_explains_a_spec_that_differs(demo_api: str, demo_data: Path, tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    shutil.copytree(REPO / "specs", specs)
    path = specs / "models" / "medbench" / "random.toml"
    path.write_text(path.read_text().replace("seed = 20261029", "seed = 8"))
    run = httpx.get(f"{demo_api}/v1/lookup", params={"model": "medbench/random", "task": "clinicalqa@0"}).json()[
        "result"]["run_id"]
    out = run_medbench("reproduce", run, "--api-url", demo_api, data=demo_data, check=False,
                       env={"MEDBENCH_SPECS": str(specs)})
    assert out.returncode == 1
    assert "model spec hash of medbench/random" in out.stderr and "task spec hash" not in out.stderr
    malformed = run_medbench("reproduce", "nope", "--api-url", demo_api, data=demo_data, check=False)
    assert malformed.returncode == 2
