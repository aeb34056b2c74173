"""schemathesis over ``POST /v1/submissions`` of a live ``medbench serve``, without a token and with
one: every check it has, in every phase. Without a token every request is 401 before its body is
read; with one, whatever it generates gets a documented status and a JSON error (never a 5xx), and
what it stores is only ever a well-formed submission of the token's owner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench._servers import Running
from support.api_data import publish_fixture
from support.live_server import live_api
from medbench.layout import DataDir
from medbench.submissions import SubmissionStore

pytestmark = pytest.mark.slow
SEED = 20261204
POST = "POST /v1/submissions"
# schema-valid data may still be refused by what no schema says (unknown task, namespace, limits):
# those refusals are the documented 403/413/422/429, and the other checks still apply to them.
CONFIG = f"""[[operations]]
include-name = "{POST}"
checks.positive_data_acceptance.expected-statuses = ["200", "201", "401", "403", "413", "422", "429"]
"""


def run_schemathesis(server: Running, work: Path, *headers: str) -> str:
    (work / "schemathesis.toml").write_text(CONFIG)
    command = [sys.executable, "-m", "schemathesis.cli", "run", f"{server.base}/v1/openapi.json",
               "--include-name", POST, "--checks", "all", "--mode", "all",
               "--phases", "examples,coverage,fuzzing", "--max-examples", "60", "--seed", str(SEED),
               "--workers", "1", "--generation-database", "none", "--no-color", "--request-timeout", "30"]
    for header in headers:
        command += ["-H", header]
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("fuzz-submissions") / "data"
    publish_fixture(root)
    (root / "submissions.toml").write_text("[limits]\nrate_limit = 100000\nquota_per_week = 100000\n")
    store = SubmissionStore.for_data(DataDir(root))
    _, secret = store.tokens.create("acme", ["submit"])
    with live_api(root, tmp_path_factory.mktemp("fuzz-log") / "server.log") as server:
        yield server, store, secret
    store.close()


def test_schemathesis_without_a_token(served, tmp_path: Path) -> None:
    server, store, _ = served
    run_schemathesis(server, tmp_path)
    assert store.list()[1] == 0


def test_schemathesis_with_a_token(served, tmp_path: Path) -> None:
    server, store, secret = served
    run_schemathesis(server, tmp_path, f"Authorization: Bearer {secret}")
    page, _ = store.list(limit=1000)
    assert all(s.owner == "acme" and s.model["slug"].startswith("acme/") and s.state == "awaiting_approval"
               for s in page)
