"""Secrets out of identity (``medbench.identity_form``): a spec hash is taken over the spec with
each value publication redacts replaced by its HMAC under the maintainer's identity key.

The fault: ``spec_hash`` was the sha256 of the unredacted settings, published beside the redacted
spec, so ``clientSecret = "hunter2"`` was recovered in 5 guesses.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import msgspec
import pytest

from pipelines.backends.settings import OpenAISettings, ReplaySettings, TransformersSettings, published
from medbench.canonical import canonical_json, spec_builtins
from medbench.identity_form import DEMO_IDENTITY_KEY, IDENTITY_KEY_ENV, IdentityKeyError, identity_key
from pipelines.engine.catalog_rows import published_spec
from pipelines.engine.specs import spec_hash
from support.model_specs import specs_with_served
from support.plugins import builtin_plugins, specs as load_specs

GUESSES = ["password", "123456", "letmein", "hunter2", "qwerty"]


@pytest.fixture
def served(tmp_path: Path):
    root = specs_with_served(tmp_path / "specs", "https://h.example/v1")
    toml = root / "models" / "acme" / "served.toml"
    toml.write_text(toml.read_text() + '\n[settings.extra_body]\nclientSecret = "hunter2"\n')
    return load_specs(root).model("acme/served")


def _with(model, secret: str):
    # a base_url can carry no secret (a query or credentials in it are spec errors): the free-form
    # extra_body is where a secret value can stand
    return msgspec.structs.replace(model, settings=OpenAISettings(
        base_url="https://h.example/v1", extra_body={"clientSecret": secret}))


def test_two_specs_differing_only_in_a_secret_get_different_hashes(served):
    assert spec_hash(served) != spec_hash(_with(served, "hunter3"))
    assert spec_hash(served) == spec_hash(_with(served, "hunter2"))  # a pure function of the spec


def test_the_published_spec_its_hash_and_a_guess_cannot_confirm_the_guess(served):
    """The attack of the issue: fill each guess into the published spec and hash it. Neither the old
    construction (sha256 of the unredacted spec) nor the keyed one under any key but the maintainer's
    (the public demo key, a guessed key) reproduces the published hash, for any guess, the right one
    included; with the maintainer's key the right guess does (so the test itself can fail)."""
    backend = builtin_plugins().backends.get(served.backend)
    shown, published_hash = published_spec(served, backend), spec_hash(served)
    assert "hunter2" not in json.dumps(shown)

    def keyed_form(guess: str, key: bytes) -> bytes:
        def mark(value: str) -> str:
            return "hmac-sha256:" + hmac.new(key, json.dumps(value).encode(), hashlib.sha256).hexdigest()

        settings = {"base_url": "https://h.example/v1",
                    "extra_body": {"clientSecret": mark(guess)}}
        body = {**spec_builtins(served), "settings": settings}
        return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    for guess in GUESSES:
        assert hashlib.sha256(canonical_json(_with(served, guess))).hexdigest() != published_hash
        for key in (DEMO_IDENTITY_KEY, b"guessed key", b""):
            assert hashlib.sha256(keyed_form(guess, key)).hexdigest() != published_hash
    assert hashlib.sha256(keyed_form("hunter2", identity_key())).hexdigest() == published_hash


def test_specs_without_secret_values_keep_their_hash(tmp_path):
    """Public values and path fields hash as before (a replay model's run ids do not change)."""
    base = _model(tmp_path)
    for settings in (TransformersSettings(model="builtin:tiny-llama", seed=3), ReplaySettings(outputs="outputs/sim.jsonl", demo_only=True),
                     OpenAISettings(base_url="https://h.example/v1", api_key_env="KEY")):
        model = msgspec.structs.replace(base, settings=settings)
        assert spec_hash(model) == hashlib.sha256(canonical_json(model)).hexdigest(), settings
    specs = load_specs(Path(__file__).resolve().parents[3] / "specs")
    for model in specs.models.values():  # every shipped spec: none holds a secret, every hash is as before
        assert spec_hash(model) == hashlib.sha256(canonical_json(model)).hexdigest(), model.slug
        assert "hmac" not in json.dumps(published(model.settings)), model.slug


def _model(tmp_path: Path):
    return load_specs(specs_with_served(tmp_path / "plain", "https://h.example/v1")).model("acme/served")


def test_a_new_identity_key_changes_only_the_hashes_of_specs_with_secret_values(served, tmp_path, monkeypatch):
    plain = _model(tmp_path)
    before = spec_hash(served), spec_hash(plain)
    other = tmp_path / "other.key"
    other.write_bytes(b"k" * 32)
    monkeypatch.setenv(IDENTITY_KEY_ENV, str(other))
    assert spec_hash(served) != before[0] and spec_hash(plain) == before[1]


def test_real_data_without_an_identity_key_is_one_clear_error_and_demo_data_uses_the_demo_key(
        served, tmp_path, monkeypatch):
    monkeypatch.delenv(IDENTITY_KEY_ENV)
    monkeypatch.setenv("MEDBENCH_DATA", str(tmp_path / "real"))
    with pytest.raises(IdentityKeyError, match=f"set {IDENTITY_KEY_ENV} to the path of a file") as caught:
        spec_hash(served)
    assert "\n" not in str(caught.value)
    demo = tmp_path / "demo"
    demo.mkdir()
    (demo / "KIND").write_text("demo\n")
    monkeypatch.setenv("MEDBENCH_DATA", str(demo))
    assert identity_key() == DEMO_IDENTITY_KEY
    first = spec_hash(served)
    short = tmp_path / "short.key"
    short.write_bytes(b"x" * 32)
    monkeypatch.setenv(IDENTITY_KEY_ENV, str(short))  # a demo directory ignores the maintainer's key
    assert spec_hash(served) == first
