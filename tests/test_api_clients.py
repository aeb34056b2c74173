"""Clients nobody here wrote, against the served ``/v1/openapi.json`` of a live server.

- schemathesis, every check it has, in every phase (examples, coverage, fuzzing, stateful), valid
  and invalid input: no 5xx, every status, body, content type and header as documented, invalid
  input refused, valid input accepted, 405 for undocumented methods;
- openapi-spec-validator accepts the document as OpenAPI 3.1;
- openapi-python-client generates a typed client from the document, and that client reads lookup,
  the leaderboard, a result and a predictions file.
A failure here means the document and the service disagree: fix whichever of the two is wrong (the
document is generated in ``api/openapi.py`` from the route decorators).
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from api_fixtures import RUN_IDS, publish_fixture
from bench._servers import Running
from live_server import live_api

SEED = 20261202
GENERATED_PACKAGE = "medbench_client"  # openapi-python-client's name for a document titled "medbench"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("api-clients") / "data"
    publish_fixture(root)
    with live_api(root, root.parent / "server.log") as running:
        yield running
    assert "Traceback" not in running.log(), running.log()


@pytest.fixture(scope="module")
def document(server: Running) -> dict[str, Any]:
    response = httpx.get(f"{server.base}/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


@pytest.mark.slow
def test_schemathesis_finds_nothing(server: Running, tmp_path: Path) -> None:
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", f"{server.base}/v1/openapi.json",
        "--checks", "all", "--mode", "all", "--phases", "examples,coverage,fuzzing,stateful",
        "--max-examples", "100", "--seed", str(SEED), "--workers", "1",
        "--generation-database", "none", "--no-color", "--request-timeout", "30",
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    counts = re.search(r"(\d+) generated, (\d+) passed", output)  # warnings (e.g. "missing test data") are not failures
    assert counts and counts.group(1) == counts.group(2) and int(counts.group(1)) > 0, output
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅  {phase}" in output or f"✅ {phase}" in output, output


def test_openapi_spec_validator_accepts_the_document(document: dict[str, Any]) -> None:
    validate(document, cls=OpenAPIV31SpecValidator)
    assert document["openapi"].startswith("3.1")


def test_every_documented_response_declares_the_contract_headers(document: dict[str, Any]) -> None:
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                headers = {name.lower() for name, spec in response.get("headers", {}).items() if spec.get("required")}
                assert {"x-medbench-warehouse", "etag", "cache-control"} <= headers, (path, method, status)


@pytest.fixture(scope="module")
def generated_client(document: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Generate the client package from the served document and import it."""
    work = tmp_path_factory.mktemp("generated-client")
    (work / "openapi.json").write_text(json.dumps(document))
    # Parquet is bytes to a client; the generator only knows the generic binary type by name.
    config = {"content_type_overrides": {"application/vnd.apache.parquet": "application/octet-stream"}, "post_hooks": []}
    (work / "config.json").write_text(json.dumps(config))
    done = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", "openapi.json", "--config", "config.json",
         "--meta", "none", "--output-path", GENERATED_PACKAGE],
        cwd=work, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    sys.path.insert(0, str(work))
    importlib.invalidate_caches()
    try:
        yield importlib.import_module(GENERATED_PACKAGE)
    finally:
        sys.path.remove(str(work))
        for name in [m for m in sys.modules if m == GENERATED_PACKAGE or m.startswith(GENERATED_PACKAGE + ".")]:
            del sys.modules[name]


def generated(module: str) -> Any:
    return importlib.import_module(f"{GENERATED_PACKAGE}.{module}")


def test_generated_client_reads_lookup_leaderboard_result_and_predictions(server: Running, generated_client: Any) -> None:
    client = generated_client.Client(base_url=server.base, raise_on_unexpected_status=True)
    lookup = generated("api.default.lookup")
    models = generated("models")

    found = lookup.sync(client=client, model="medgemma-27b", task="clinicalqa@0")
    assert isinstance(found, models.Lookup)
    assert found.status == models.LookupStatus.EVALUATED
    result = found.result
    assert result.run_id == RUN_IDS["medgemma-cqa0"] and result.superseded_by is None
    assert result.metric.name == "accuracy" and result.metric.value == pytest.approx(0.71)
    assert result.eval_date == dt.date(2026, 10, 20)  # typed by the generated model, not a string
    assert result.model.provider_model_id == "medgemma-27b"

    missing = lookup.sync(client=client, model="nobody/none", task="clinicalqa@0")
    assert missing.status == models.LookupStatus.NOT_EVALUATED and missing.result is None
    unknown_task = lookup.sync(client=client, model="medgemma-27b", task="nope@0")
    assert isinstance(unknown_task, models.Error) and unknown_task.error == "task_not_found"

    board = generated("api.default.get_leaderboard").sync(client=client, task="clinicalqa@0")
    assert isinstance(board, models.Leaderboard)
    assert (board.task, board.metric) == ("clinicalqa@0", "accuracy")
    assert [row.rank for row in board.rows] == [1, 2, 3]
    assert [row.run_id for row in board.rows] == [RUN_IDS["gptoss-cqa0"], RUN_IDS["medgemma-cqa0"], RUN_IDS["random-cqa0"]]

    get_result = generated("api.default.get_result")
    full = get_result.sync(client=client, run_id=RUN_IDS["medgemma-cqa0-old"])
    assert isinstance(full, models.Result)
    assert full.superseded_by == RUN_IDS["medgemma-cqa0"]
    assert [m.name for m in full.metrics] == ["accuracy", "parse_rate"]
    assert full.predictions_url == f"{server.base}/artifacts/{full.run_id}/predictions.parquet"
    not_found = get_result.sync(client=client, run_id="0123456789ab")
    assert isinstance(not_found, models.Error) and not_found.error == "run_not_found"

    download = generated("api.default.get_predictions").sync_detailed(client=client, run_id=full.run_id)
    assert download.status_code == 200
    assert download.headers["etag"] == f'"{full.predictions_sha256}"'
    table = pq.read_table(pa.BufferReader(download.content))
    assert table.column_names == ["instance_id", "prediction", "label", "correct", "parse_status", "raw_output"]
