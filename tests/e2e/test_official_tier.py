"""The official tier end to end on the demo data, through the ``medbench`` command and the API.

The worked example (``examples/official-package``) is built into a wheel here, run in the sandbox
for a model whose provider submits it, scored by the task's own scorer and published: it reaches
the demo leaderboard as an official row beside medbench's own baseline of the same model, with a
different run id, and ``medbench reproduce`` reruns it to the same bytes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from litestar.testing import TestClient

from api.app import create_app
from pipelines.tasks.vitaldb_ioh.reporting import validation_windows
from pipelines.tasks.vitaldb_ioh.score import REFIT
from support.commands import run_medbench
from support.wheels import build_example_wheel, build_wheel
from medbench.layout import DataDir

pytestmark = pytest.mark.slow

PAIRS = {"clinicalqa@0": "medbench/random", "vitaldb-ioh@0": "medbench/neg-last-map"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, Path]:
    """A demo data directory with medbench's own results of both pairs, and the example wheel."""
    root = tmp_path_factory.mktemp("official")
    data = root / "data"
    args = [a for task, model in PAIRS.items() for a in ("--task", task, "--model", model)]
    run_medbench("materialize", "--demo", *args, data=data)
    return data, build_example_wheel(root / "wheel")


def official(data: Path, wheel: Path, task: str, owner: str, check: bool = True):
    return run_medbench("official", "run", "--package", str(wheel), "--task", task, "--model", PAIRS[task],
                        "--submitted-by", owner, data=data, check=check)


def test_the_worked_example_reaches_the_official_leaderboard_and_reproduces(demo):
    data, wheel = demo
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    for task in PAIRS:
        assert "official result" in official(data, wheel, task, "medbench").stdout
    with TestClient(create_app(data)) as c:
        for task, model in PAIRS.items():
            rows = c.get("/v1/leaderboard", params={"task": task}).json()["rows"]
            mine = [r for r in rows if r["model"]["slug"] == model]
            assert sorted(r["tier"] for r in mine) == ["baseline", "official"]
            assert len({r["run_id"] for r in mine}) == 2  # both listed, different run ids
            only = c.get("/v1/leaderboard", params={"task": task, "tier": "official"}).json()["rows"]
            assert [r["tier"] for r in only] == ["official"]
            run = only[0]["run_id"]
            result = c.get(f"/v1/results/{run}").json()
            assert result["provenance"]["submitted_by"] == "medbench"
            assert result["provenance"]["package_sha256"] == sha
            assert result["provenance"]["sandbox"].startswith("medbench-sandbox/2 ")
            recorded = result["config"]["official"]
            assert recorded["installed"] == [{"name": "medbench-example-official", "version": "0.1.0", "sha256": sha}]
            assert recorded["tree_limit"] in ("cgroup2", "cgroup1", "watchdog") and recorded["dependencies"] == []
            assert recorded["dependencies_sha256"] == hashlib.sha256(b"").hexdigest()  # no index: no dependency
            baseline = next(r for r in mine if r["tier"] == "baseline")["run_id"]
            assert set(c.get(f"/v1/results/{baseline}").json()["provenance"].values()) == {None}
            package = c.get(f"/artifacts/{run}/package.whl")
            assert package.status_code == 200 and hashlib.sha256(package.content).hexdigest() == sha
            assert c.get(f"/artifacts/{baseline}/package.whl").json()["error"] == "run_not_found"
            page = c.get(f"/r/{run}").text
            assert "badge-official" in page and sha in page
            if task.startswith("vitaldb-ioh"):  # the package's validation scores fit its twins and thresholds
                fitted = result["config"]["probabilities"]
                assert fitted["probabilistic"] and fitted["validation_recalibration"]["n_validation_windows"] > 0
                assert set(fitted["alarm_thresholds"]) == {"0.05", "0.1"}
                names = {m["name"] for m in result["metrics"]}
                assert {"brier_recalibrated", "calibration_slope_recalibrated"} <= names
                # its validation windows travel with its predictions, and every replicate refits on them
                stored = validation_windows(pq.read_table(DataDir(data).predictions_path(run)))
                assert stored.num_rows == fitted["validation_recalibration"]["n_validation_windows"]
                method = next(m["method"] for m in result["metrics"] if m["name"] == "brier_recalibrated")
                assert method.endswith(REFIT)
        none = c.get("/v1/results", params={"tier": "official", "model": "medbench/linear-extrapolation"}).json()
        assert none["results"] == []
    again = official(data, wheel, "clinicalqa@0", "medbench")
    assert "already evaluated" in again.stderr  # rule one on the exact package
    reproduced = run_medbench("reproduce", run, "--api-url", "http://127.0.0.1:9", data=data, check=False)
    assert reproduced.returncode == 0 and "IDENTICAL" in reproduced.stdout, reproduced.stderr


def test_a_package_from_someone_else_is_not_official(demo, tmp_path):
    data, _ = demo
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n    for i in instances:\n"
                                  "        yield {'instance_id': i['instance_id'], 'output': 'A'}\n", name="third_party")
    out = official(data, wheel, "clinicalqa@0", "someone-else").stdout
    assert out.startswith("baseline result ")


def test_a_failing_package_publishes_nothing(demo, tmp_path):
    data, _ = demo
    before = sorted(p.name for p in (data / "artifacts").iterdir())
    pointer = (data / "warehouse" / "CURRENT").read_text()
    wheel = build_wheel(tmp_path, "import socket\n\ndef predict(instances, context):\n"
                                  "    socket.create_connection(('pypi.org', 443), timeout=5)\n    yield {}\n")
    failed = official(data, wheel, "clinicalqa@0", "medbench", check=False)
    assert failed.returncode == 1
    lines = failed.stderr.strip().splitlines()
    assert lines[-1].startswith("medbench official: failed: the package raised ") and len(lines) == 1
    assert sorted(p.name for p in (data / "artifacts").iterdir()) == before
    assert (data / "warehouse" / "CURRENT").read_text() == pointer


def test_a_wheel_whose_names_inject_a_command_is_refused_before_it_is_kept(demo, tmp_path):
    """The names a result records (and ``medbench reproduce`` later hands the sandbox) pass the door first:
    a dist-info folder or a file name carrying a shell command is refused, nothing is kept or published."""
    data, _ = demo
    before = sorted(p.name for p in (data / "artifacts").iterdir())
    source = ("def predict(instances, context):\n    for i in instances:\n"
              "        yield {'instance_id': i['instance_id'], 'output': 'A'}\n")
    for n, (kwargs, words) in enumerate((
            ({"dist_name": "x;touch${IFS}pwned;y"}, "is not NAME-VERSION.dist-info"),
            ({"file_name": "hostile_pkg-0.1-py3-none-any.whl;touch${IFS}pwned;.whl"}, "not a valid wheel file name"))):
        out = tmp_path / str(n)
        out.mkdir()
        refused = official(data, build_wheel(out, source, **kwargs), "clinicalqa@0", "medbench", check=False)
        assert refused.returncode == 1, refused.stderr
        assert "medbench official: failed:" in refused.stderr and words in refused.stderr, refused.stderr
    assert sorted(p.name for p in (data / "artifacts").iterdir()) == before
    assert not list(data.rglob("pwned")) and not list(Path.cwd().glob("pwned"))


def test_the_package_sees_public_inputs_only(demo, monkeypatch):
    """What a package is handed: clinicalqa's question, findings and options; IOH's input window;
    never a label, an answer, a subject or a case."""
    import pyarrow.parquet as pq

    from pipelines.engine.evaluate import resolve_evaluation
    from pipelines.engine.inputs import task_instances_path
    from pipelines.official.evaluate import public_inputs
    from support.plugins import specs as load_specs
    from medbench.layout import DataDir

    data = DataDir(demo[0])
    specs = load_specs()
    keys = {"clinicalqa@0": {"instance_id", "question", "findings", "options"},
            "vitaldb-ioh@0": {"instance_id", "map", "step_seconds"}}
    for task, model in PAIRS.items():
        public, context = public_inputs(resolve_evaluation(specs, data, task, model), data)
        assert public and all(set(p) == keys[task] for p in public)
        assert context["answer_field"] == ("output" if task.startswith("clinicalqa") else "score")
    # IOH: the test windows, then the validation windows (inputs only), never a train window
    ev = resolve_evaluation(specs, data, "vitaldb-ioh@0", PAIRS["vitaldb-ioh@0"])
    windows = pq.read_table(task_instances_path(data, ev.task, ev.family), columns=["instance_id", "split"])
    split_of = dict(zip(windows.column("instance_id").to_pylist(), windows.column("split").to_pylist()))
    given = [split_of[p["instance_id"]] for p in public_inputs(ev, data)[0]]
    assert given == sorted(given) and set(given) == {"test", "validation"}
    qa = public_inputs(resolve_evaluation(specs, data, "clinicalqa@0", PAIRS["clinicalqa@0"]), data)[0]
    assert all(set(p["options"]) == {"A", "B", "C", "D", "E"} for p in qa)


def test_a_replaced_package_is_not_served(demo, tmp_path):
    """The wheel on disk must still be the one published: a replaced file answers 503, never its bytes."""
    data, wheel = demo
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    official(data, wheel, "clinicalqa@0", "medbench")  # published (or reused) by the first test
    kept = data / "packages" / sha / wheel.name
    kept.write_bytes(kept.read_bytes() + b"tampered")
    with TestClient(create_app(data)) as c:
        run = c.get("/v1/leaderboard", params={"task": "clinicalqa@0", "tier": "official"}).json()["rows"][0]["run_id"]
        answer = c.get(f"/artifacts/{run}/package.whl")
        assert answer.status_code == 503 and answer.json()["error"] == "artifact_unavailable"
    kept.write_bytes(wheel.read_bytes())
