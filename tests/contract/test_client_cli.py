"""The ``medbench`` client commands against a real server over a synthetic warehouse (fast lane).

Exit codes of docs/cli.md (0 found, 1 not found, 2 usage error, 3 server unreachable), ``--json``
printing the server's JSON, the predictions download with its checksum, and no Dagster import.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from support.api_data import RUN_IDS
from api.client import ApiClient, NotFound
from pipelines.cli.main import main
from support.serving import REPO, closed_port, serve_in_thread
from support.site_data import BETTER, WORSE


@pytest.fixture(scope="module")
def api(site_data: Path) -> Iterator[str]:
    with serve_in_thread(site_data) as base:
        yield base


def medbench(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_tasks_and_datasets(api: str, capsys: pytest.CaptureFixture) -> None:
    code, out, _ = medbench(capsys, "tasks", "--api-url", api)
    assert code == 0 and "clinicalqa@0" in out and "vitaldb-ioh@0" in out
    code, out, _ = medbench(capsys, "tasks", "--api-url", api, "--json")
    assert code == 0 and json.loads(out) == httpx.get(f"{api}/v1/tasks").json()
    code, out, _ = medbench(capsys, "datasets", "--api-url", api)
    assert code == 0 and "CC BY 4.0" in out and "10.1038/s41597-022-01411-5" in out


def test_leaderboard(api: str, capsys: pytest.CaptureFixture) -> None:
    code, out, _ = medbench(capsys, "leaderboard", "clinicalqa@0", "--model-type", "llm", "--limit", "1", "--api-url", api)
    top = httpx.get(f"{api}/v1/leaderboard", params={"task": "clinicalqa@0", "model_type": "llm", "limit": 1}).json()
    assert code == 0 and top["rows"][0]["run_id"] in out and len(top["rows"]) == 1
    code, out, _ = medbench(capsys, "leaderboard", "clinicalqa@0", "--model-type", "llm", "--limit", "1", "--api-url",
                            api, "--json")
    assert json.loads(out) == top


def test_result_and_lookup(api: str, capsys: pytest.CaptureFixture) -> None:
    run = RUN_IDS["medgemma-cqa0"]
    code, out, _ = medbench(capsys, "result", run, "--api-url", api)
    assert code == 0 and run in out and "@misc{medbench-" + run in out and "accuracy 0.7100" in out
    code, out, _ = medbench(capsys, "lookup", "medgemma-27b", "clinicalqa@0", "--api-url", api)
    assert code == 0 and out.startswith("evaluated") and run in out
    code, out, _ = medbench(capsys, "lookup", "no-such-model", "clinicalqa@0", "--api-url", api, "--json")
    assert code == 1 and json.loads(out) == {"status": "not_evaluated", "result": None}
    code, out, _ = medbench(capsys, "lookup", "no-such-model", "clinicalqa@0", "--api-url", api)
    assert code == 1 and f"`medbench eval no-such-model clinicalqa@0 --api-url {api}`" in out  # runs as printed


@pytest.mark.parametrize("args", [
    ("result", "0123456789ab"), ("leaderboard", "nope"), ("lookup", "medgemma-27b", "nope@0"),
    ("predictions", "0123456789ab", "-o", "x.parquet"),
])
def test_not_found_exits_1(api: str, capsys: pytest.CaptureFixture, args: tuple[str, ...]) -> None:
    code, out, err = medbench(capsys, *args, "--api-url", api, "--json")
    assert code == 1
    assert json.loads(out)["error"] in ("run_not_found", "task_not_found") and "medbench" in err


@pytest.mark.parametrize("args", [
    ("lookup", "gpt-oss-20b", "clinicalqa@0"),  # a provider id shared by two providers: invalid_parameter
    ("leaderboard", "clinicalqa", "--limit", "0"),
    ("compare", RUN_IDS["medgemma-cqa0"], RUN_IDS["logreg-ioh0"]),
])
def test_invalid_parameter_exits_2(api: str, capsys: pytest.CaptureFixture, args: tuple[str, ...]) -> None:
    code, out, _ = medbench(capsys, *args, "--api-url", api, "--json")
    assert code == 2 and json.loads(out)["error"] == "invalid_parameter"


def test_argparse_usage_errors_exit_2(capsys: pytest.CaptureFixture) -> None:
    for args in (["leaderboard"], ["leaderboard", "clinicalqa", "--model-type", "robot"], ["predictions", "0123456789ab"]):
        with pytest.raises(SystemExit) as exc:
            main(args)
        assert exc.value.code == 2
    capsys.readouterr()


@pytest.mark.parametrize("args", [("tasks",), ("stats",), ("result", "0123456789ab"), ("lookup", "a", "b"),
                                  ("compare", "0123456789ab", "0123456789ab"), ("leaderboard", "clinicalqa"),
                                  ("verify", "0123456789ab"), ("submissions", "status", "sub-x")])
def test_unreachable_server_exits_3(capsys: pytest.CaptureFixture, args: tuple[str, ...]) -> None:
    code, _, err = medbench(capsys, *args, "--api-url", f"http://127.0.0.1:{closed_port()}")
    assert code == 3 and "cannot reach the medbench API" in err
    assert "--api-url" in err and "MEDBENCH_API_URL" in err, err  # how to name the right server (issue #40)


def test_api_url_from_the_environment(api: str, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDBENCH_API_URL", api)
    code, out, _ = medbench(capsys, "stats", "--json")
    assert code == 0 and json.loads(out)["results"] == 7


def test_predictions_download_checks_the_sha256(api: str, capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    run = RUN_IDS["neglastmap-ioh0"]
    target = tmp_path / "out" / "preds.parquet"
    code, out, err = medbench(capsys, "predictions", run, "-o", str(target), "--api-url", api)
    published = httpx.get(f"{api}/v1/results/{run}").json()["predictions_sha256"]
    assert code == 0 and published in out and "100%" in err  # tqdm's bar on stderr
    assert hashlib.sha256(target.read_bytes()).hexdigest() == published
    assert pq.read_table(target).column_names == ["instance_id", "score", "label", "caseid", "subjectid", "t"]


def test_a_tampered_download_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"not the published bytes", headers={"content-length": "23"})

    target = tmp_path / "p.parquet"
    with ApiClient("http://medbench.test", transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(NotFound, match="sha256"):
            client.download("/artifacts/0123456789ab/predictions.parquet", target, "0" * 64)
    assert list(tmp_path.iterdir()) == []


def test_compare(api: str, capsys: pytest.CaptureFixture) -> None:
    a, b = RUN_IDS[BETTER], RUN_IDS[WORSE]
    code, out, _ = medbench(capsys, "compare", a, b, "--api-url", api)
    assert code == 0 and "a scores higher" in out and "openai/gpt-oss-20b" in out
    code, out, _ = medbench(capsys, "compare", a, b, "--api-url", api, "--json")
    assert json.loads(out) == httpx.get(f"{api}/v1/compare", params={"a": a, "b": b}).json()


def test_a_client_command_does_not_import_dagster(api: str) -> None:
    probe = (
        "import sys\n"
        "from pipelines.cli.main import main\n"
        f"code = main(['lookup', 'medgemma-27b', 'clinicalqa@0', '--api-url', {api!r}, '--json'])\n"
        "assert code == 0, code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('dagster', 'torch', 'sklearn', 'duckdb'))\n"
        "print('HEAVY', heavy)\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                            check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "HEAVY []" in result.stdout


def test_models(api: str, capsys: pytest.CaptureFixture) -> None:
    code, out, _ = medbench(capsys, "models", "--q", "MEDGEMMA", "--api-url", api, "--json")
    assert code == 0
    page = json.loads(out)
    assert page["total"] >= 1 and all("medgemma" in (m["slug"] + m["name"] + m["provider_model_id"]).lower()
                                      for m in page["models"])
    code, out, _ = medbench(capsys, "models", "--q", "medgemma", "--api-url", api)
    assert code == 0 and "medgemma" in out
    code, _, _ = medbench(capsys, "models", "--q", "no-such-model-anywhere", "--api-url", api)
    assert code == 1
    code, _, _ = medbench(capsys, "models", "--limit", "0", "--api-url", api)
    assert code == 2
    code, _, _ = medbench(capsys, "models", "--api-url", "http://127.0.0.1:9")
    assert code == 3
