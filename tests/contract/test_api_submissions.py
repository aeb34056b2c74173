"""``POST /v1/submissions`` and the submission GETs, in process, over the shared published fixture and a
fresh store per test: every refusal answers its documented code and stores nothing; hostile input
(oversized and deeply nested bodies, slugs with ``..``, ``/``, control characters or look-alike
letters, another owner's, revoked and expired tokens) never reaches the store or a 5xx."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.submission_desk import MAX_BODY_BYTES, SubmissionDesk
from medbench.registry import installed_plugins
from pipelines.engine.specs import load_specs
from pipelines.engine.submission_check import SubmissionChecker
from pipelines.engine.submission_policy import Endpoint, Limits, Owner, SubmissionPolicy
from support.api_data import RUN_IDS
from medbench.submissions import SubmissionStore

REV = "0123456789abcdef0123456789abcdef01234567"
SPECS = load_specs(None, installed_plugins())


def body(slug: str = "acme/m1", **model) -> dict:
    spec = {"slug": slug, "name": "M1", "type": "llm", "provider_model_id": slug.rsplit("/", 1)[-1], "revision": REV,
            "backend": "transformers", "settings": {"model": "acme/m1"}, **model}
    return {"model": spec, "tasks": ["clinicalqa@0"]}


@dataclass
class Desk:
    client: TestClient
    store: SubmissionStore
    secret: str
    token_id: str

    def post(self, payload: dict | bytes, secret: str | None = "own", **headers: str):
        secret = self.secret if secret == "own" else secret
        if secret is not None:
            headers["authorization"] = f"Bearer {secret}"
        if isinstance(payload, bytes):
            return self.client.post("/v1/submissions", content=payload, headers=headers)
        return self.client.post("/v1/submissions", json=payload, headers=headers)

    def stored(self) -> int:
        return self.store.list(limit=1000)[1]


def make_desk(store: SubmissionStore, policy: SubmissionPolicy, check=None) -> SubmissionDesk:
    checker = SubmissionChecker(SPECS, store, lambda: policy)
    return SubmissionDesk(store=store, check=check or checker, quota_for=policy.quota_for,
                          rate_limit=policy.limits.rate_limit, rate_window_s=policy.limits.rate_window_s)


POLICY = SubmissionPolicy(limits=Limits(quota_per_week=3, rate_limit=1000),
                          endpoints={"loopback": Endpoint(base_url_env="MEDBENCH_TEST_ENDPOINT", models=["sim-1"])},
                          owners={"auto": Owner(auto_approve=True)})


@pytest.fixture
def desk(shared_data: tuple[Path, str], tmp_path: Path) -> Iterator[Desk]:
    store = SubmissionStore.open(f"sqlite:///{tmp_path / 'submissions.sqlite3'}")
    token, secret = store.tokens.create("acme", ["submit"])
    with TestClient(create_app(shared_data[0], desk=make_desk(store, POLICY))) as client:
        yield Desk(client, store, secret, token.id)
    store.close()


def refused(response, status: int, code: str, *words: str) -> None:
    assert response.status_code == status, response.text
    answer = response.json()
    assert set(answer) == {"error", "message"} and answer["error"] == code, answer
    for word in words:
        assert word in answer["message"], answer["message"]


def test_a_valid_submission_is_stored_awaiting_approval_and_readable_by_anyone(desk: Desk) -> None:
    made = desk.post(body())
    assert made.status_code == 201, made.text
    sub = made.json()
    assert sub["state"] == "awaiting_approval" and sub["owner"] == "acme" and sub["model"]["provider"] == "acme"
    assert [h["state"] for h in sub["history"]] == ["received", "validated", "awaiting_approval"]
    assert desk.secret not in made.text and desk.token_id not in made.text
    read = desk.client.get(f"/v1/submissions/{sub['id']}")
    assert read.status_code == 200 and read.json() == sub and read.headers["cache-control"] == "no-cache"
    listed = desk.client.get("/v1/submissions", params={"owner": "acme", "state": "awaiting_approval"}).json()
    assert listed["total"] == 1 and listed["submissions"][0]["id"] == sub["id"]
    refused(desk.client.get("/v1/submissions/0123456789ab"), 404, "submission_not_found")
    refused(desk.client.get("/v1/submissions/../../etc"), 404, "not_found")
    refused(desk.client.get("/v1/submissions", params={"state": "approved"}), 400, "invalid_parameter", "state")


def test_the_same_open_request_returns_the_first_and_a_rejected_one_can_be_resubmitted(desk: Desk) -> None:
    first = desk.post(body()).json()
    again = desk.post(body())
    assert again.status_code == 200 and again.json()["id"] == first["id"] and desk.stored() == 1
    desk.store.transition(first["id"], "rejected", "wrong weights")
    second = desk.post(body())
    assert second.status_code == 201 and second.json()["id"] != first["id"]


@pytest.mark.parametrize(("secret", "why"), [(None, "no token"), ("mbt_" + "A" * 58, "unknown token"),
                                             ("not-a-token", "unknown token")])
def test_tokens_are_checked_before_the_body_is_read(desk: Desk, secret: str | None, why: str) -> None:
    oversized = b"{" * (MAX_BODY_BYTES * 4)  # answered 401, not 413: the body was never read
    refused(desk.post(oversized, secret=secret), 401, "unauthorized", why)
    assert desk.stored() == 0


def test_revoked_and_expired_tokens_say_so(desk: Desk) -> None:
    desk.store.tokens.revoke(desk.token_id)
    refused(desk.post(body()), 401, "unauthorized", "revoked")
    _, short = desk.store.tokens.create("acme", ["submit"], expires_in_s=-1)
    refused(desk.post(body(), secret=short), 401, "unauthorized", "expired")
    assert desk.stored() == 0


def test_another_owners_namespace_is_forbidden(desk: Desk) -> None:
    _, beta = desk.store.tokens.create("beta", ["submit"])
    refused(desk.post(body("acme/m9"), secret=beta), 403, "forbidden", "namespace", "beta/")
    assert desk.stored() == 0


@pytest.mark.parametrize("slug", ["acme/../m1", "acme/m1/x", "acme/m\x00", "acme/m\x1b[31m", "acme/mо1",  # Cyrillic о
                                  "аcme/m1", "acme/ｍ1", "acme/", "/m1", "ACME/m1", "acme/m1\n"])
def test_hostile_slugs_are_refused_naming_the_field(desk: Desk, slug: str) -> None:
    answer = desk.post(body(slug))
    refused(answer, 422, "invalid_submission", "model.slug")
    assert desk.stored() == 0


def test_bodies_over_64_kib_and_deep_json_are_refused_in_json(desk: Desk) -> None:
    padded = msgspec.json.encode(body(description="x" * MAX_BODY_BYTES))
    refused(desk.post(padded), 413, "payload_too_large")
    at_limit = b'{"x": "' + b"y" * (MAX_BODY_BYTES - 9) + b'"}'
    assert len(at_limit) == MAX_BODY_BYTES
    refused(desk.post(at_limit), 422, "invalid_submission", "x: unknown field")  # read whole, then judged
    refused(desk.post(at_limit + b" "), 413, "payload_too_large")  # 64 KiB + 1
    refused(desk.post(b"[" * 100_000 + b"]" * 100_000), 413, "payload_too_large")
    refused(desk.post(b"[" * 30_000 + b"]" * 30_000), 422, "invalid_submission", "nested")
    refused(desk.post(b'{"a": ' * 40 + b"1" + b"}" * 40), 422, "invalid_submission", "nested")
    bracketed = desk.post(body(description="[{" * 200 + '\\"[' * 50))  # brackets inside a string are text
    assert bracketed.status_code == 201, bracketed.text
    refused(desk.post(b"{not json"), 422, "invalid_submission", "not valid JSON")
    refused(desk.post(b""), 422, "invalid_submission", "empty")
    assert desk.stored() == 1


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"backend": "replay"}, "model.backend", "not accepted from outside"),
    ({"backend": "rule"}, "model.backend", "baselines"),
    ({"backend": "sklearn"}, "model.backend", "not accepted"),
    ({"provider": "acme"}, "model.provider", "token's owner"),
    ({"revision": "main"}, "model.revision", "not a commit"),
    ({"settings": {"model": "/models/m1"}}, "model.settings.model", "local paths"),
    ({"settings": {"model": "acme/m1", "chat_template_kwargs": {"a": "~/.ssh/id_rsa"}}}, "model.settings", "local paths"),
    ({"settings": {"model": "https://evil.example/m1"}}, "model.settings.model", "URLs are refused"),
    ({"settings": {"model": "https://u:pw@hub.example/m1"}}, "model.settings.model", "credentials"),
    ({"settings": {"model": "acme/m1", "hf_token": "hf_abc"}}, "model.settings.hf_token", "secrets"),
    ({"settings": {"model": "acme/m1", "chat_template_kwargs": {"accessToken": "x"}}}, "accessToken", "secrets"),
    ({"settings": {"model": "acme/m1", "chat_template_kwargs": {"clientSecret": "x"}}}, "clientSecret", "secrets"),
    ({"settings": {"model": "acme/m1", "chat_template_kwargs": {"pass": "x"}}}, "pass", "secrets"),
    ({"settings": {"model": "acme/m1", "device": "cuda:0"}}, "model.settings.device", "unknown field"),
    ({"settings": {"model": "acme/m1", "batch_size": 100000}}, "model.settings.batch_size", "limits"),
    ({"backend": "vllm", "settings": {"model": "acme/m1", "engine": {"tensor_parallel_size": 64}}},
     "model.settings.engine.tensor_parallel_size", "limits"),
    ({"backend": "openai", "settings": {"endpoint": "http://127.0.0.1:9/v1"}}, "model.settings.endpoint", "URLs"),
    ({"backend": "openai", "settings": {"endpoint": "nowhere"}}, "model.settings.endpoint", "loopback"),
    ({"backend": "openai", "settings": {"endpoint": "loopback", "api_key": "sk-x"}}, "model.settings.api_key", "secrets"),
    ({"provider_model_id": "gpt-oss-20b"}, "model.provider_model_id", "ambiguous"),
    ({"provider_model_id": "medgemma-27b-text-it"}, "model.provider_model_id", "google"),
    ({"colour": "red"}, "model.colour", "unknown field"),
])
def test_refusals_name_the_field_and_store_nothing(desk: Desk, change: dict, field: str, words: str) -> None:
    refused(desk.post(body(**change)), 422, "invalid_submission", field, words)
    assert desk.stored() == 0


def test_an_unknown_top_level_field_is_named_where_it_is(desk: Desk) -> None:
    """Issue #40: ``{"colour": "red"}`` beside ``model`` answered ``model.settings.colour``, even for a model
    without settings; it is ``colour: unknown field``."""
    for model in (body()["model"], {k: v for k, v in body()["model"].items() if k != "settings"}):
        answer = desk.post({"model": model, "tasks": ["clinicalqa@0"], "colour": "red"})
        refused(answer, 422, "invalid_submission", "colour", "unknown field")
        assert answer.json()["message"].startswith("colour: unknown field"), answer.json()["message"]
    assert desk.stored() == 0


def test_counts_named_like_tokens_are_not_taken_for_secrets(desk: Desk) -> None:
    """``max_new_tokens`` holds a count: the docs' own example spec sets it, and it must be accepted."""
    made = desk.post(body(settings={"model": "acme/m1", "max_new_tokens": 256}))
    assert made.status_code == 201, made.text


def test_task_and_tier_refusals(desk: Desk) -> None:
    refused(desk.post({**body(), "tasks": ["nope@3"]}), 422, "invalid_submission", "tasks", "unknown task")
    refused(desk.post({**body(), "tasks": ["vitaldb-ioh@0"]}), 422, "invalid_submission", "not a text task")
    refused(desk.post({**body(), "tasks": []}), 422, "invalid_submission", "at least one")
    refused(desk.post({**body(), "tier": "official"}), 422, "invalid_submission", "package_sha256")
    refused(desk.post({**body(), "resources": {"pool": "gpu", "memory_gib": 10_000, "wall_minutes": 5}}),
            422, "invalid_submission", "resources.memory_gib")
    assert desk.stored() == 0


def test_an_openai_model_names_a_configured_endpoint(desk: Desk) -> None:
    made = desk.post(body(backend="openai", revision="2025-08", provider_model_id="sim-1", settings={"endpoint": "loopback"}))
    assert made.status_code == 201, made.text
    settings = made.json()["model"]["settings"]
    # The spec names the endpoint, resolved when the model runs: no URL (nor its variable) is written.
    assert settings == {"endpoint": "loopback"} and made.json()["model"]["price"] == {"basis": "free"}


def test_quota_is_charged_for_accepted_submissions_only(desk: Desk) -> None:
    ids = [desk.post(body(f"acme/m{i}")).json()["id"] for i in range(3)]
    over = desk.post(body("acme/m3"))
    refused(over, 429, "quota_exceeded", "quota 3")
    assert int(over.headers["retry-after"]) > 0 and desk.stored() == 3
    desk.store.transition(ids[0], "failed", "run 0123 died")
    assert desk.post(body("acme/m3")).status_code == 201


def test_the_rate_limit_answers_retry_after(shared_data: tuple[Path, str], tmp_path: Path) -> None:
    store = SubmissionStore.open(f"sqlite:///{tmp_path / 's.sqlite3'}")
    _, secret = store.tokens.create("acme", ["submit"])
    policy = SubmissionPolicy(limits=Limits(rate_limit=2, rate_window_s=3600))
    with TestClient(create_app(shared_data[0], desk=make_desk(store, policy))) as client:
        answers = [client.post("/v1/submissions", json=body(), headers={"authorization": f"Bearer {secret}"})
                   for _ in range(3)]
    assert [a.status_code for a in answers] == [201, 200, 429]
    refused(answers[2], 429, "rate_limited")
    assert 3500 <= int(answers[2].headers["retry-after"]) <= 3600


def test_auto_approval_is_a_per_owner_switch(desk: Desk) -> None:
    _, auto = desk.store.tokens.create("auto", ["submit"])
    sub = desk.post(body("auto/m1", settings={"model": "auto/m1"}), secret=auto).json()
    assert sub["state"] == "queued" and "auto-approved" in sub["state_reason"]


def test_rule_one_answers_already_evaluated_and_queues_nothing(shared_data: tuple[Path, str], tmp_path: Path) -> None:
    """The validator's hash is replaced by the published result's (the fixture's specs are not real
    spec files); everything after it is the served code."""
    store = SubmissionStore.open(f"sqlite:///{tmp_path / 's.sqlite3'}")
    _, secret = store.tokens.create("kgpu", ["submit"])
    real = SubmissionChecker(SPECS, store, lambda: POLICY)

    def as_published(payload, owner):
        return msgspec.structs.replace(real(payload, owner), model_spec_hash="m" * 64)

    with TestClient(create_app(shared_data[0], desk=make_desk(store, POLICY, check=as_published))) as client:
        answer = client.post("/v1/submissions", json=body("kgpu/medgemma-27b", provider_model_id="medgemma-27b"),
                             headers={"authorization": f"Bearer {secret}"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "already_evaluated"
    assert [r["run_id"] for r in answer.json()["results"]] == [RUN_IDS["medgemma-cqa0"]]
    assert store.list()[1] == 0


def test_a_read_only_server_refuses_writes_with_405(shared_data: tuple[Path, str]) -> None:
    with TestClient(create_app(shared_data[0])) as client:
        refused(client.post("/v1/submissions", json=body()), 405, "method_not_allowed")
        assert client.get("/v1/submissions").status_code == 200


def test_the_status_page_shows_state_reason_and_history(desk: Desk) -> None:
    sub = desk.post(body()).json()
    desk.store.transition(sub["id"], "rejected", "revision <b>not</b> on the Hub")
    page = desk.client.get(f"/submissions/{sub['id']}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "rejected" in page.text and "revision &lt;b&gt;not&lt;/b&gt; on the Hub" in page.text  # escaped
    assert page.text.count("<tr><td>") == 4 and f"/v1/submissions/{sub['id']}" in page.text
    missing = desk.client.get("/submissions/0123456789ab")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")


def test_the_submissions_page_lists_what_the_api_lists(desk: Desk) -> None:
    """Issue #40: no list page and no nav link; ``/submissions`` lists the public states, the same data
    as ``/v1/submissions``, and never a token (not in the page, not in an address)."""
    first = desk.post(body()).json()
    second = desk.post(body(slug="acme/m2")).json()
    desk.store.transition(second["id"], "rejected", "weights <b>gone</b>")
    page = desk.client.get("/submissions", headers={"accept": "text/html"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    api = desk.client.get("/v1/submissions").json()
    ids = re.findall(r'<tr data-submission-id="([0-9a-f]{12})"', page.text)
    assert ids == [s["id"] for s in api["submissions"]] and {first["id"], second["id"]} <= set(ids)
    assert "weights &lt;b&gt;gone&lt;/b&gt;" in page.text and "awaiting approval" in page.text
    assert f'href="/submissions/{first["id"]}"' in page.text and 'href="/v1/submissions"' in page.text
    assert desk.secret not in page.text and "mbt_" not in page.text and "token=" not in page.text
    assert '<a href="/submissions" aria-current="page">Submissions</a>' in page.text  # in the nav
    assert 'href="/submissions"' in desk.client.get("/").text
    rejected = desk.client.get("/submissions?state=rejected").text
    assert re.findall(r'data-submission-id="([0-9a-f]{12})"', rejected) == [second["id"]]
    assert desk.client.get("/submissions?state=nonsense").status_code == 400
