"""Published settings are an allow-list: only what a settings Struct declares public is shown.

The fault (issue #22, item 3): redaction matched secret-looking *names*, so ``clientSecret``,
``accessToken``, ``privateKey``, ``bearerToken``, ``pass``, ``creds`` and ``?accessToken=`` were
published verbatim in ``config.backend_settings`` and the warehouse's ``models.spec``.
"""

from __future__ import annotations

import json
import typing

import msgspec
import pytest

from pipelines.backends.redact import REDACTED, redact_url
from pipelines.backends.settings import (
    MODEL_SETTINGS,
    OpenAISettings,
    VllmEngine,
    published,
)
from pipelines.engine.catalog_rows import published_spec
from pipelines.engine.specs import spec_hash
from support.plugins import builtin_plugins, specs as load_specs

PROBES = {"clientSecret": "zq-client-secret", "accessToken": "zq-access-token", "privateKey": "zq-private-key",
          "bearerToken": "zq-bearer-token", "pass": "zq-pass", "creds": "zq-creds"}


def _leaky() -> OpenAISettings:
    return OpenAISettings(
        base_url="https://api.example.com:8443/v1?accessToken=zq-query-token&region=zq-region#zq-fragment",
        api_key_env="MY_KEY",
        extra_body={**PROBES, "headers": {"X-Custom": "zq-header", "nested": {"deep": "zq-deep"}},
                    "list": ["zq-item", {"inList": "zq-in-list"}, 7]})


def test_no_probe_value_is_published_and_every_key_is_kept() -> None:
    shown = published(_leaky())
    text = json.dumps(shown)
    assert "zq-" not in text, text
    body = shown["extra_body"]
    assert {k: body[k] for k in PROBES} == {k: REDACTED for k in PROBES}
    assert body["headers"] == {"X-Custom": REDACTED, "nested": {"deep": REDACTED}}
    assert body["list"] == [REDACTED, {"inList": REDACTED}, REDACTED]
    assert shown["base_url"] == f"https://api.example.com:8443/v1?accessToken={REDACTED}&region={REDACTED}#{REDACTED}"
    assert shown["api_key_env"] == "MY_KEY" and shown["concurrency"] == 8  # typed, public


@pytest.mark.parametrize(("url", "shown"), [
    ("https://user:pw-secret@h.example/v1", f"https://{REDACTED}@h.example/v1"),
    ("https://user:pw-secret@h.example:81/v1?a=1", f"https://{REDACTED}@h.example:81/v1?a={REDACTED}"),
    ("https://h.example/v1?pw-secret", f"https://h.example/v1?{REDACTED}"),  # a bare query piece may be the token
    ("https://h.example/v1?x=pw-secret#pw-secret", f"https://h.example/v1?x={REDACTED}#{REDACTED}"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
])
def test_urls_keep_scheme_host_port_path_only(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_free_form_tables_of_every_backend_are_redacted() -> None:
    from pipelines.backends.settings import TransformersSettings, VllmSettings

    vllm = published(VllmSettings(model="org/m", chat_template_kwargs={"token": "zq-a"},
                                  engine=VllmEngine(max_model_len=4096, extra={"hf_token": "zq-b"})))
    assert vllm["chat_template_kwargs"] == {"token": REDACTED} and vllm["engine"]["extra"] == {"hf_token": REDACTED}
    assert vllm["engine"]["max_model_len"] == 4096 and vllm["model"] == "org/m"
    tf = published(TransformersSettings(model="org/m", chat_template_kwargs={"creds": "zq-c"}))
    assert tf["chat_template_kwargs"] == {"creds": REDACTED} and tf["dtype"] == "auto"


def _settings_structs() -> list[type]:
    found: list[type] = [VllmEngine]
    for typ in MODEL_SETTINGS.values():
        found += list(typing.get_args(typ)) or [typ]
    return found


@pytest.mark.parametrize("cls", _settings_structs(), ids=lambda c: c.__name__)
def test_every_settings_field_is_declared_once(cls: type) -> None:
    """A new field must be sorted deliberately (undeclared, it would be published as ``<redacted>``);
    a free-form mapping can never be declared public."""
    sets = {name: frozenset(getattr(cls, name)) for name in ("public_fields", "url_fields", "path_fields",
                                                             "free_form_fields", "local_fields")
            if hasattr(cls, name)}
    hints = typing.get_type_hints(cls)
    for field in msgspec.structs.fields(cls):
        holders = [name for name, fields in sets.items() if field.name in fields]
        assert len(holders) == 1, f"{cls.__name__}.{field.name} is declared in {holders or 'nothing'}"
        if "dict" in str(hints[field.name]):
            assert holders == ["free_form_fields"], f"{cls.__name__}.{field.name} is a free-form table"
    names = {f.name for f in msgspec.structs.fields(cls)}
    assert all(fields <= names for fields in sets.values()), sets


def test_the_published_model_spec_uses_the_same_redaction_and_keeps_the_hash(tmp_path) -> None:
    from support.model_specs import specs_with_served

    root = specs_with_served(tmp_path / "specs", "https://h.example/v1")  # a query there is a spec error
    toml = root / "models" / "acme" / "served.toml"
    toml.write_text(toml.read_text() + '\n[settings.extra_body]\nclientSecret = "zq-client-secret"\n')
    model = load_specs(root).model("acme/served")
    shown = published_spec(model, builtin_plugins().backends.get(model.backend))
    assert "zq-" not in json.dumps(shown)
    assert shown["settings"] == {"base_url": "https://h.example/v1",
                                 "extra_body": {"clientSecret": REDACTED}}
    assert (shown["slug"], shown["revision"], shown["backend"]) == ("acme/served", "1", "openai")
    # the hash (and so the run id) is taken over what ran, not over what is published
    other = OpenAISettings(base_url="https://h.example/v1", extra_body={"clientSecret": "other"})
    assert spec_hash(model) != spec_hash(msgspec.structs.replace(model, settings=other))
