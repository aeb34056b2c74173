"""``PUT /v1/submissions/{id}/package``: an official submission waits in ``awaiting_package`` until
its owner uploads the wheel whose sha256 it named; every refusal answers its code and keeps nothing."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.submission_desk import SubmissionDesk
from medbench.registry import installed_plugins
from pipelines.engine.specs import load_specs
from pipelines.engine.submission_check import SubmissionChecker
from pipelines.engine.submission_policy import Limits, SubmissionPolicy
from support.wheels import build_wheel
from medbench.submissions import SubmissionStore

REV = "0123456789abcdef0123456789abcdef01234567"
POLICY = SubmissionPolicy(limits=Limits(quota_per_week=20, rate_limit=1000))
SOURCE = "def predict(instances, context):\n    return iter(())\n"


@pytest.fixture
def desk(shared_data: tuple[Path, str], tmp_path: Path) -> Iterator[tuple[TestClient, dict, Path]]:
    data = tmp_path / "data"
    shutil.copytree(shared_data[0], data, symlinks=True)
    store = SubmissionStore.open(f"sqlite:///{tmp_path / 'submissions.sqlite3'}")
    secrets = {owner: store.tokens.create(owner, ["submit"])[1] for owner in ("acme", "other")}
    checker = SubmissionChecker(load_specs(None, installed_plugins()), store, lambda: POLICY)
    app_desk = SubmissionDesk(store=store, check=checker, quota_for=POLICY.quota_for, rate_limit=1000)
    with TestClient(create_app(data, desk=app_desk)) as client:
        yield client, secrets, data
    store.close()


def submit(client: TestClient, secret: str, sha: str) -> dict:
    model = {"slug": "acme/m1", "name": "M1", "type": "llm", "provider_model_id": "m1", "revision": REV,
             "backend": "transformers", "settings": {"model": "acme/m1"}}
    made = client.post("/v1/submissions", json={"model": model, "tasks": ["clinicalqa@0"], "tier": "official",
                                                  "package_sha256": sha}, headers={"authorization": f"Bearer {secret}"})
    assert made.status_code == 201, made.text
    return made.json()


def put(client: TestClient, sid: str, secret: str | None, payload: bytes):
    headers = {"authorization": f"Bearer {secret}"} if secret else {}
    return client.put(f"/v1/submissions/{sid}/package", content=payload, headers=headers)


def refused(response, status: int, code: str, *words: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"] == code, response.text
    for word in words:
        assert word in response.json()["message"]


def test_the_owner_uploads_the_named_wheel_and_the_submission_awaits_approval(desk, tmp_path):
    client, secrets, data = desk
    wheel = build_wheel(tmp_path, SOURCE)
    payload = wheel.read_bytes()
    sha = hashlib.sha256(payload).hexdigest()
    sub = submit(client, secrets["acme"], sha)
    assert sub["state"] == "awaiting_package"
    refused(put(client, sub["id"], None, payload), 401, "unauthorized")
    refused(put(client, sub["id"], secrets["other"], payload), 403, "forbidden", "acme")
    refused(put(client, sub["id"], secrets["acme"], payload + b"x"), 422, "invalid_submission", "sha256")
    refused(put(client, "0123456789ab", secrets["acme"], payload), 404, "submission_not_found")
    assert not list((data / "packages").rglob("*.whl"))  # a refusal keeps nothing
    done = put(client, sub["id"], secrets["acme"], payload)
    assert done.status_code == 200, done.text
    assert done.json()["state"] == "awaiting_approval"
    kept = data / "packages" / sha / wheel.name
    assert kept.read_bytes() == payload
    refused(put(client, sub["id"], secrets["acme"], payload), 422, "invalid_submission", "not awaiting_package")


def test_a_file_that_is_not_a_wheel_or_too_large_is_refused(desk, monkeypatch):
    client, secrets, data = desk
    junk = b"not a zip at all"
    sub = submit(client, secrets["acme"], hashlib.sha256(junk).hexdigest())
    refused(put(client, sub["id"], secrets["acme"], junk), 422, "invalid_submission", "not a wheel")
    monkeypatch.setenv("MEDBENCH_MAX_PACKAGE_BYTES", "1000")
    auth = {"authorization": f"Bearer {secrets['acme']}"}
    refused(client.put(f"/v1/submissions/{sub['id']}/package", content=b"x" * 1001, headers=auth),
            413, "payload_too_large")  # from Content-Length, before the body is read
    streamed = (b"x" * 300 for _ in range(4))  # chunked: no Content-Length, cut as the stream passes the limit
    refused(client.put(f"/v1/submissions/{sub['id']}/package", content=streamed, headers=auth),
            413, "payload_too_large")
    assert not [p for p in (data / "packages").rglob("*") if p.is_file()]
    assert client.get(f"/v1/submissions/{sub['id']}").json()["state"] == "awaiting_package"


def test_an_owner_past_the_sandbox_budget_gets_quota_exceeded_with_the_reset_date(shared_data, tmp_path):
    """Every official run counts against the owner's sandbox budget, failed ones included."""
    import time

    from pipelines.engine.submission_policy import SubmissionPolicy as Policy

    policy = Policy(limits=Limits(quota_per_week=20, rate_limit=1000, sandbox_seconds_per_30_days=60))
    store = SubmissionStore.open(f"sqlite:///{tmp_path / 'submissions.sqlite3'}")
    secret = store.tokens.create("acme", ["submit"])[1]
    checker = SubmissionChecker(load_specs(None, installed_plugins()), store, lambda: policy)
    app_desk = SubmissionDesk(store=store, check=checker, quota_for=policy.quota_for, rate_limit=1000)
    with TestClient(create_app(shared_data[0], desk=app_desk)) as client:
        first = submit(client, secret, "ab" * 32)
        start = time.time() - 3600
        for state, at in (("awaiting_approval", start - 2), ("queued", start - 1), ("running", start),
                          ("failed", start + 90)):
            store.transition(first["id"], state, "the package failed" if state == "failed" else None, now=at)
        model = {"slug": "acme/m2", "name": "M2", "type": "llm", "provider_model_id": "m2", "revision": REV,
                 "backend": "transformers", "settings": {"model": "acme/m2"}}
        again = client.post("/v1/submissions", json={"model": model, "tasks": ["clinicalqa@0"], "tier": "official",
                                                      "package_sha256": "cd" * 32},
                            headers={"authorization": f"Bearer {secret}"})
        refused(again, 429, "quota_exceeded", "used 90 of its 60 sandbox-seconds", "refused until 20")
    store.close()
