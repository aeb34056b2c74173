"""Every ``/v1`` route's body, and ``/v1/openapi.json``, from one data directory, against a committed snapshot.

The read questions are declared once (``api.questions``) and their routes, MCP tools, client methods
and CLI commands are derived from that table; this test is what says the derivation changed nothing a
client sees: it serves the fixture warehouse (``support.api_data``, published at a fixed time), asks
every route with the parameters a client would use (each filter, a few refusals) and compares the
status and body of each with ``snapshots/bodies.json``. The snapshot was recorded before the table
existed. The publish signs with a fixed key (Ed25519 signatures are deterministic), not the test
run's fresh one, so release ids, manifests, checkpoints and proofs are the same on every run.

Regenerate deliberately with ``MEDBENCH_UPDATE_SNAPSHOTS=1 pytest tests/contract/test_api_bodies.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.app import create_app
from support.api_data import RUN_IDS, log_everything, publish_fixture

SNAPSHOT = Path(__file__).parent / "snapshots" / "bodies.json"
BASE = "http://testserver.local"

A, B, OLD = RUN_IDS["gptoss-cqa0"], RUN_IDS["random-cqa0"], RUN_IDS["medgemma-cqa0-old"]
REQUESTS = [
    "/v1/datasets", "/v1/tasks", "/v1/tasks/clinicalqa", "/v1/tasks/clinicalqa@0", "/v1/tasks/clinicalqa?version=1",
    "/v1/tasks/nosuch", "/v1/tasks/vitaldb-ioh",
    "/v1/leaderboard?task=clinicalqa@0", "/v1/leaderboard?task=clinicalqa@0&model_type=llm",
    "/v1/leaderboard?task=clinicalqa@0&tier=official", "/v1/leaderboard?task=clinicalqa@0&tier=baseline&limit=2",
    "/v1/leaderboard?task=clinicalqa@0&metric=nosuch", "/v1/leaderboard?task=vitaldb-ioh",
    "/v1/leaderboard?task=clinicalqa@0&judge=x/y", "/v1/leaderboard", "/v1/leaderboard?task=nosuch",
    "/v1/results", "/v1/results?task=clinicalqa@0&limit=2&offset=1", "/v1/results?model=gpt-oss-20b",
    "/v1/results?dataset=vitaldb&model_type=ml", "/v1/results?tier=official",
    f"/v1/results/{A}", f"/v1/results/{OLD}", "/v1/results/000000000000", "/v1/results/nope",
    "/v1/lookup?model=openai/gpt-oss-20b&task=clinicalqa@0", "/v1/lookup?model=gpt-oss-20b&task=clinicalqa@0",
    "/v1/lookup?model=nosuch/model&task=clinicalqa", "/v1/lookup?model=medbench/random&task=clinicalqa@0&judge=a/b",
    "/v1/lookup?task=clinicalqa",
    f"/v1/compare?a={A}&b={B}", f"/v1/compare?a={A}&b={A}", f"/v1/compare?a={A}",
    "/v1/models", "/v1/models?q=gpt&limit=1&offset=1", "/v1/models?type=rule", "/v1/models?provider=kgpu",
    "/v1/models/kgpu/medgemma-27b", "/v1/models/no/such",
    "/v1/stats", "/v1/releases", "/v1/releases?limit=1", "/v1/releases/nosuch", "/v1/keys",
    "/v1/log/checkpoint", "/v1/log/entries?start=0&end=3", "/v1/log/consistency?from=1&to=3",
    f"/v1/results/{A}/proof", "/v1/submissions", "/v1/submissions/0123456789ab",
    f"/artifacts/{A}/predictions.parquet", f"/artifacts/{A}/package.whl", "/healthz", "/v1/openapi.json",
]
# The website's machine-readable twins of the leaderboard (the CSV is the one body the table changed).
CSV_REQUESTS = [
    "/tasks/clinicalqa/leaderboard.csv?version=0", "/tasks/clinicalqa/leaderboard.csv?version=0&model_type=llm",
    "/tasks/clinicalqa/leaderboard.csv?version=0&tier=official",
    "/tasks/clinicalqa/leaderboard.csv?version=0&metric=parse_rate",
]

FIXED_SEED = bytes(range(32))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from warehouse.keys import KEY_ENV

    tmp = tmp_path_factory.mktemp("bodies")
    key = tmp / "fixed.pem"
    key.write_bytes(Ed25519PrivateKey.from_private_bytes(FIXED_SEED).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    root = tmp / "data"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, str(key))
        publish_fixture(root)
        log_everything(root, tmp / "kept-checkpoint")
    with TestClient(create_app(root, public_url=BASE), base_url=BASE) as c:
        yield c


def _record(client: TestClient) -> dict[str, Any]:
    releases = client.get("/v1/releases").json()["releases"]
    asked = list(REQUESTS)
    for release in releases:
        asked += [f"/v1/releases/{release['id']}", f"/v1/releases/{release['id']}/proof",
                  f"/v1/leaderboard?task=clinicalqa@0&release={release['id']}"]
    bodies: dict[str, Any] = {}
    for path in [*asked, *CSV_REQUESTS]:
        response = client.get(path)
        kind = response.headers.get("content-type", "")
        if kind.startswith("application/json"):
            body: Any = response.json()
        elif kind.startswith("text/"):
            body = response.text
        else:
            body = {"sha256": hashlib.sha256(response.content).hexdigest(), "bytes": len(response.content)}
        bodies[path] = {"status": response.status_code, "content_type": kind, "body": body}
    return bodies


def test_every_route_answers_as_recorded(client: TestClient) -> None:
    recorded = _record(client)
    if os.environ.get("MEDBENCH_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(recorded, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert list(recorded) == list(expected)
    for path, answer in expected.items():
        assert recorded[path] == answer, path


MCP_SNAPSHOT = Path(__file__).parent / "snapshots" / "mcp_tools.json"


def test_the_mcp_tools_are_listed_as_recorded() -> None:
    """``tools/list``'s items (names, descriptions, input and output schemas, from the Structs' docstrings
    too), recorded before the table of read questions like the bodies above."""
    from api.agent_tools import tool_definitions

    listed = json.loads(json.dumps(tool_definitions()))
    if os.environ.get("MEDBENCH_UPDATE_SNAPSHOTS"):
        MCP_SNAPSHOT.write_text(json.dumps(listed, indent=1) + "\n", encoding="utf-8")
    assert listed == json.loads(MCP_SNAPSHOT.read_text(encoding="utf-8"))
