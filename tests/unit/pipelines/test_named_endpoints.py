"""Named endpoints of the openai backend: ``settings.endpoint`` resolves from the maintainers'
configuration at run time, never from the spec; the demo's loopback endpoint block is rewritten in
the data directory's file without touching the maintainers' keys; the loopback server answers a
demo item's prompt as the simulated model, and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import msgspec
import pytest

from pipelines.backends.availability import check_backend, resolve_api_key_env, resolve_base_url
from pipelines.backends.endpoints import EndpointError, resolve_endpoint
from pipelines.backends.registry import OpenAIBackend
from pipelines.backends.settings import OpenAISettings
from pipelines.cli.demo_endpoint import ENDPOINT, configure
from medbench.specs import SpecError, model_spec_type
from pipelines.datasets.clinicalqa.demo import demo_clinicalqa_rows
from pipelines.datasets.clinicalqa.simulated_server import SimulatedChatServer
from pipelines.engine.submission_policy import FILE_NAME, load_policy
from medbench.layout import DATA_ENV, DataDir


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    (root / FILE_NAME).write_text('[owners.acme]\nauto_approve = true\n\n[endpoints.paid]\n'
                                  'base_url = "https://api.example.com/v1"\napi_key_env = "PAID_KEY"\n'
                                  '\n[endpoints.moving]\nbase_url_env = "MOVING_URL"\n')
    monkeypatch.setenv(DATA_ENV, str(root))
    return root


def test_a_named_endpoint_resolves_from_the_data_directorys_configuration(data, monkeypatch) -> None:
    paid = OpenAISettings(endpoint="paid")
    assert resolve_base_url(paid) == "https://api.example.com/v1" and resolve_api_key_env(paid) == "PAID_KEY"
    monkeypatch.delenv("PAID_KEY", raising=False)
    assert check_backend("openai", paid) == "not runnable here: the API key variable PAID_KEY is not set"
    monkeypatch.setenv("PAID_KEY", "sk-test")
    assert check_backend("openai", paid) is None
    assert "MOVING_URL is unset" in check_backend("openai", OpenAISettings(endpoint="moving"))
    monkeypatch.setenv("MOVING_URL", "http://127.0.0.1:9/v1")
    assert resolve_endpoint("moving").base_url == "http://127.0.0.1:9/v1"


def test_an_unknown_endpoint_or_a_url_never_resolves(data) -> None:
    reason = check_backend("openai", OpenAISettings(endpoint="nowhere"))
    assert reason.startswith("not runnable here: settings.endpoint: no endpoint 'nowhere'") and "paid" in reason
    for name in ("http://evil.example/v1", "../paid", "paid/../x"):
        with pytest.raises(EndpointError, match="not an endpoint name"):
            resolve_endpoint(name)
        assert resolve_base_url(OpenAISettings(endpoint=name)) is None


def test_a_spec_naming_an_endpoint_brings_no_address_of_its_own(tmp_path: Path) -> None:
    typ = model_spec_type("openai", OpenAISettings)
    base = {"slug": "acme/m", "name": "M", "type": "llm", "provider": "acme", "provider_model_id": "m",
            "revision": "1", "backend": "openai", "tasks": [], "price": {"basis": "free"}, "description": "d"}
    ok = msgspec.convert({**base, "settings": {"endpoint": "paid"}}, typ)
    assert OpenAIBackend().check_spec(tmp_path / "m.toml", ok) is ok
    both = msgspec.convert({**base, "settings": {"endpoint": "paid", "base_url": "http://x.example/v1"}}, typ)
    with pytest.raises(SpecError, match="settings.endpoint.*remove settings.base_url"):
        OpenAIBackend().check_spec(tmp_path / "m.toml", both)
    url = msgspec.convert({**base, "settings": {"endpoint": "http://x.example/v1"}}, typ)
    with pytest.raises(SpecError, match="not an endpoint name"):
        OpenAIBackend().check_spec(tmp_path / "m.toml", url)


def test_the_demo_endpoint_block_is_rewritten_and_the_rest_kept(data) -> None:
    configure(DataDir(data), "http://127.0.0.1:1111/v1")
    configure(DataDir(data), "http://127.0.0.1:2222/v1")
    text = (data / FILE_NAME).read_text()
    assert text.count(f"[endpoints.{ENDPOINT}]") == 1 and "1111" not in text
    policy = load_policy(data=DataDir(data))
    assert policy.endpoints[ENDPOINT].base_url == "http://127.0.0.1:2222/v1"
    assert policy.owners["acme"].auto_approve and "paid" in policy.endpoints


def test_the_loopback_server_answers_demo_items_as_the_simulated_model() -> None:
    row = demo_clinicalqa_rows()[4]
    prompt = f"문제: {row['question']}\n{row['exam']}\n" + "\n".join(f"{k[-1]}. {v}" for k, v in row["options"].items())
    replay = Path(__file__).resolve().parents[3] / "specs/models/medbench-sim/outputs/terse.jsonl"
    wanted = next(json.loads(line)["output"] for line in replay.read_text().splitlines()
                  if json.loads(line)["instance_id"] == str(row["question_id"]))
    with SimulatedChatServer() as server:
        def ask(content: str, model: str = "terse") -> httpx.Response:
            return httpx.post(f"{server.base_url}/chat/completions",
                              json={"model": model, "messages": [{"role": "user", "content": content}]})

        answer = ask(prompt)
        assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == wanted
        unknown = ask("What is the capital of France?")
        assert unknown.status_code == 404 and "demo ClinicalQA items only" in unknown.json()["error"]["message"]
        assert {m["id"] for m in httpx.get(f"{server.base_url}/models").json()["data"]} >= {"english", "terse"}
