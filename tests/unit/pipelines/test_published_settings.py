"""Published settings carry no secrets and no local paths; the openai backend refuses URL credentials.

The fault: a ``base_url`` with ``user:pass@`` or ``?token=`` was published verbatim in
``config.backend_settings``, and httpx silently sent the userinfo as Basic auth instead of the key.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.backends.openai_backend import OpenAIChatGenerator
from pipelines.backends.redact import redact_url
from pipelines.backends.settings import OpenAISettings, published
from pipelines.engine.catalog_rows import published_spec
from pipelines.engine.specs import SpecError
from support.plugins import builtin_plugins, specs as load_specs
from support.model_specs import specs_with_served

SECRETS = ("hunter2", "s3cr3t", "tok123", "sigval", "pw0rd")


@pytest.mark.parametrize(("url", "shown"), [
    ("https://user:hunter2@api.example.com/v1", "https://<redacted>@api.example.com/v1"),
    ("https://api.example.com/v1?token=tok123&region=eu", "https://api.example.com/v1?token=<redacted>&region=<redacted>"),
    ("https://h/v1?api_key=s3cr3t&sig=sigval&X-Amz-Signature=sigval", None),
    ("https://h/v1?access_token=tok123&password=pw0rd&Key=s3cr3t", None),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
])
def test_urls_are_redacted(url: str, shown: str | None) -> None:
    out = redact_url(url)
    assert not any(s in out for s in SECRETS), out
    if shown is not None:
        assert out == shown


def test_published_settings_redact_every_url() -> None:
    settings = OpenAISettings(base_url="https://me:hunter2@h.example/v1?token=tok123", api_key_env="MY_KEY",
                              extra_body={"callback": "https://h/cb?secret=s3cr3t", "auth_token": "tok123"})
    shown = json.dumps(published(settings))
    assert not any(s in shown for s in SECRETS), shown
    assert "MY_KEY" in shown  # the variable's name is not a secret
    assert published(OpenAISettings(base_url="http://127.0.0.1:8000/v1"))["base_url"] == "http://127.0.0.1:8000/v1"


def test_the_openai_backend_refuses_credentials_in_the_url() -> None:
    with pytest.raises(ValueError) as info:
        OpenAIChatGenerator("https://me:hunter2@h.example/v1", "m", 8, api_key_env="K")
    message = str(info.value)
    assert "settings.base_url" in message and "hunter2" not in message and "\n" not in message


def _spec_root(tmp_path: Path, base_url: str) -> Path:
    return specs_with_served(tmp_path / "specs", base_url)


def test_a_spec_with_url_credentials_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"served\.toml: key `settings\.base_url` holds credentials") as info:
        load_specs(_spec_root(tmp_path, "https://me:hunter2@h.example/v1"))
    assert "hunter2" not in str(info.value)


def test_the_published_model_spec_is_redacted(tmp_path: Path) -> None:
    # a query in settings.base_url is a spec error now (tests/faults/test_endpoint_url.py); a free-form value still hides
    root = _spec_root(tmp_path, "https://h.example/v1")
    served = root / "models" / "acme" / "served.toml"
    served.write_text(served.read_text().replace("[settings]\n", '[settings]\nextra_body = { auth_token = "tok123" }\n'))
    model = load_specs(root).model("acme/served")
    shown = json.dumps(published_spec(model, builtin_plugins().backends.get(model.backend)))
    assert "tok123" not in shown and "h.example" in shown and "auth_token" in shown


def test_ordinary_settings_are_published_as_they_are() -> None:
    from pipelines.backends.settings import VllmEngine, VllmSettings

    settings = VllmSettings(model="org/model", engine=VllmEngine(dtype="bfloat16", extra={"tokenizer": "org/tok", "tokenizer_mode": "auto"}))
    shown = published(settings)
    # `engine.extra` is free-form (passed verbatim to vllm.LLM): its keys are published, its values are not.
    assert shown["engine"]["extra"] == {"tokenizer": "<redacted>", "tokenizer_mode": "<redacted>"}
    assert shown["engine"]["dtype"] == "bfloat16" and shown["engine"]["tensor_parallel_size"] == 1
    assert shown["max_new_tokens"] is None and shown["model"] == "org/model"
