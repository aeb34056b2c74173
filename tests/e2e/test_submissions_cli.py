"""The write path as a maintainer and a model author use it, through the ``medbench`` command and a
real ``medbench serve``: tokens made and revoked on the command line, a submission sent, followed
and approved; ``--workers 2`` sees a revocation on its next request in every process, and
``--read-only`` refuses writes with 405."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import httpx
import pytest

from support.api_data import publish_fixture
from support.commands import run_medbench
from support.live_server import medbench_serve

pytestmark = pytest.mark.slow
SPEC = """slug = "acme/m1"
name = "Acme M1"
type = "llm"
provider_model_id = "acme-m1"
revision = "0123456789abcdef0123456789abcdef01234567"
backend = "transformers"
release_date = 2026-10-01

[settings]
model = "acme/m1"
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("submissions-cli") / "data"
    publish_fixture(root)
    return root


def test_token_submit_status_approve_revoke(data: Path, tmp_path: Path) -> None:
    made = run_medbench("tokens", "create", "--owner", "acme", "--scope", "submit", "--note", "e2e", data=data)
    secret = made.stdout.strip()
    assert re.fullmatch(r"mbt_[A-Z2-7]{52}[0-9A-Za-z]{6}", secret), made.stdout
    token_id = made.stderr.split()[0]
    listed = run_medbench("tokens", "list", data=data).stdout
    assert listed.startswith(token_id + " owner=acme scopes=submit") and secret not in listed
    spec = tmp_path / "acme-m1.toml"
    spec.write_text(SPEC)
    with medbench_serve(data, tmp_path / "server.log", "--workers", "2", ready_path="/v1/submissions") as server:
        api = ("--api-url", server.base)
        sent = run_medbench("submit", str(spec), "--task", "clinicalqa@0", *api, data=data, env={"MEDBENCH_TOKEN": secret})
        sub_id = re.search(r"^submission ([0-9a-f]{12}): awaiting_approval$", sent.stdout, re.M).group(1)
        assert secret not in sent.stdout + sent.stderr
        printed = re.search(r"^follow it: medbench (.*)$", sent.stdout, re.M).group(1)  # runs as printed (issue #40)
        assert run_medbench(*shlex.split(printed), data=data).stdout.startswith(f"submission {sub_id}: "), printed
        unknown = run_medbench("submissions", "approve", "0123456789ab", "--reason", "x", data=data, check=False)
        assert unknown.returncode == 1 and str(data) in unknown.stderr and "MEDBENCH_DATA" in unknown.stderr
        spec_branch = tmp_path / "branch.toml"
        spec_branch.write_text(SPEC.replace('"0123456789abcdef0123456789abcdef01234567"', '"main"'))
        invalid = run_medbench("submit", str(spec_branch), "--task", "clinicalqa@0", *api, data=data, check=False,
                               env={"MEDBENCH_TOKEN": secret})
        assert invalid.returncode == 2 and "model.revision" in invalid.stderr and "not a commit" in invalid.stderr
        run_medbench("submissions", "approve", sub_id, "--reason", "weights checked", data=data)
        status = run_medbench("submissions", "status", sub_id, *api, data=data).stdout
        assert "submission " + sub_id + ": queued (approved: weights checked)" in status
        assert run_medbench("submissions", "list", "--owner", "acme", *api, data=data).stdout.startswith(sub_id)
        page = httpx.get(f"{server.base}/submissions/{sub_id}")
        assert page.status_code == 200 and "weights checked" in page.text
        run_medbench("tokens", "revoke", token_id, data=data)
        for _ in range(6):  # whichever worker answers, the revocation holds
            answer = httpx.post(f"{server.base}/v1/submissions", json={}, headers={"authorization": f"Bearer {secret}"})
            assert answer.status_code == 401 and "revoked" in answer.json()["message"]
        refused = run_medbench("submit", str(spec), "--task", "clinicalqa@0", "--token", secret, *api, data=data,
                               check=False)
        assert refused.returncode == 1 and "revoked" in refused.stderr
    assert "Traceback" not in server.log()


def test_read_only_refuses_writes(data: Path, tmp_path: Path) -> None:
    with medbench_serve(data, tmp_path / "server.log", "--read-only", ready_path="/v1/submissions") as server:
        answer = httpx.post(f"{server.base}/v1/submissions", json={})
        assert answer.status_code == 405 and answer.json()["error"] == "method_not_allowed"
        assert answer.headers["allow"] == "GET, HEAD"
        assert httpx.get(f"{server.base}/v1/submissions").status_code == 200
