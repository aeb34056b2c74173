"""The built-in tiny model: deterministic, idempotent, and a real model the transformers backend runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.engine.generations import GenerationStore
from pipelines.backends.base import PromptItem
from pipelines.backends.tiny_llm import (
    TINY_LLAMA,
    build_tiny_llm,
    resolve_model_path,
    tiny_llm_revision,
)
from pipelines.backends.transformers_backend import TransformersGenerator
from support.plugins import specs as load_specs


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return build_tiny_llm(tmp_path_factory.mktemp("models") / "tiny", seed=0)


def clinical_items(n: int) -> list[PromptItem]:
    """Prompts of different lengths in the shape of the clinicalqa prompt."""
    items = []
    for i in range(n):
        findings = "체온 38.5°C, 맥박 110회/분. " * (1 + i % 4)
        prompt = (
            f"문제: {40 + i}세 환자가 흉통으로 내원하였다. 가장 적절한 검사는?\n검사 소견: {findings}\n"
            "보기:\nA. 심전도\nB. 흉부 X선\nC. 복부 초음파\nD. 뇌 MRI\nE. 요검사\n"
            '마지막 줄에 "정답: X" 형식으로 답하세요.'
        )
        items.append(PromptItem(instance_id=f"q{i:03d}", prompt=prompt))
    return items


def test_build_is_byte_identical_for_a_seed_and_differs_across_seeds(tiny_model, tmp_path):
    again = build_tiny_llm(tmp_path / "again", seed=0)
    other = build_tiny_llm(tmp_path / "other", seed=1)
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json", "config.json"):
        assert (again / name).read_bytes() == (tiny_model / name).read_bytes(), name
    assert tiny_llm_revision(again) == tiny_llm_revision(tiny_model)
    assert (other / "model.safetensors").read_bytes() != (tiny_model / "model.safetensors").read_bytes()
    assert tiny_llm_revision(other) != tiny_llm_revision(tiny_model)


def test_build_has_what_a_hub_checkpoint_has(tiny_model):
    config = json.loads((tiny_model / "config.json").read_text())
    assert config["model_type"] == "llama"
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["hidden_size"] // config["num_attention_heads"] == config["head_dim"] == 64
    tok_config = json.loads((tiny_model / "tokenizer_config.json").read_text())
    assert "{{ bos_token }}" in tok_config["chat_template"]
    assert {tok_config["bos_token"], tok_config["eos_token"], tok_config["pad_token"]} == {
        "<|bos|>",
        "<|eos|>",
        "<|pad|>",
    }
    vocab = json.loads((tiny_model / "tokenizer.json").read_text())["model"]["vocab"]
    assert 512 <= len(vocab) <= 1000
    assert config["vocab_size"] == len(vocab)


def test_build_is_reused_when_complete_and_redone_when_broken(tiny_model, tmp_path):
    target = build_tiny_llm(tmp_path / "m", seed=0)
    weights = target / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    assert build_tiny_llm(target, seed=0) == target
    assert weights.stat().st_mtime_ns == stamp  # reused, not rewritten

    weights.write_bytes(weights.read_bytes()[:1000])  # a damaged build is not "complete"
    build_tiny_llm(target, seed=0)
    assert weights.read_bytes() == (tiny_model / "model.safetensors").read_bytes()

    build_tiny_llm(target, seed=1)  # another seed replaces the build in place
    assert tiny_llm_revision(target) == tiny_llm_revision(build_tiny_llm(tmp_path / "s1", seed=1))


def test_spec_revision_is_the_revision_of_a_fresh_build(tiny_model, tmp_path):
    spec = load_specs().model("medbench/tiny-llama")
    assert spec.settings.model == TINY_LLAMA
    built = resolve_model_path(spec.settings.model, tmp_path, seed=spec.settings.seed)
    assert tiny_llm_revision(Path(built)) == spec.revision
    assert resolve_model_path("google/medgemma-27b-text-it", tmp_path) == "google/medgemma-27b-text-it"
    with pytest.raises(ValueError, match="unknown builtin model"):
        resolve_model_path("builtin:huge-llama", tmp_path)


def test_transformers_backend_generates_every_item_once_with_token_counts(tiny_model, tmp_path):
    from transformers import AutoTokenizer

    items = clinical_items(10)
    store = GenerationStore(tmp_path / "gen.jsonl")
    logs: list[str] = []
    generator = TransformersGenerator(str(tiny_model), max_new_tokens=8, batch_size=4, num_threads=1)
    usage = generator.generate(items, store, logs.append)

    lines = [json.loads(line) for line in store.path.read_text().splitlines()]
    assert sorted(line["instance_id"] for line in lines) == [item.instance_id for item in items]
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    for item in items:
        gen = store.load()[item.instance_id]
        chat = tokenizer.apply_chat_template(
            [{"role": "user", "content": item.prompt}], tokenize=False, add_generation_prompt=True
        )
        assert chat.startswith("<|bos|><|user|>\n") and chat.endswith("<|assistant|>\n")
        assert gen.prompt_tokens == len(tokenizer(chat, add_special_tokens=False)["input_ids"])
        assert 1 <= gen.completion_tokens <= 8
        assert isinstance(gen.output, str)
    gens = store.load().values()
    assert usage.prompt_tokens == sum(g.prompt_tokens for g in gens)
    assert usage.completion_tokens == sum(g.completion_tokens for g in gens)
    assert usage.hardware.startswith("cpu (")
    assert usage.device_seconds > 0 and usage.wall_seconds >= usage.device_seconds
    assert any("10/10" in line for line in logs)

    # A second call finds everything stored: nothing generated, the same token totals reported.
    before = store.path.read_bytes()
    again = generator.generate(items, store, logs.append)
    assert store.path.read_bytes() == before
    assert (again.prompt_tokens, again.completion_tokens) == (usage.prompt_tokens, usage.completion_tokens)
    assert again.device_seconds == 0.0


def test_left_padded_batches_match_one_prompt_at_a_time(tiny_model, tmp_path):
    """Batching pads prompts of different lengths; with padding on the wrong side or a wrong
    attention mask, a batched greedy answer would differ from the same prompt run alone."""
    items = clinical_items(6)
    one = GenerationStore(tmp_path / "one.jsonl")
    many = GenerationStore(tmp_path / "many.jsonl")
    TransformersGenerator(str(tiny_model), max_new_tokens=8, batch_size=1, num_threads=1).generate(
        items, one, lambda _: None
    )
    TransformersGenerator(str(tiny_model), max_new_tokens=8, batch_size=6, num_threads=1).generate(
        items, many, lambda _: None
    )
    assert len({len(item.prompt) for item in items}) > 1
    solo, batched = one.load(), many.load()
    for item in items:
        assert batched[item.instance_id].output == solo[item.instance_id].output
        assert batched[item.instance_id].prompt_tokens == solo[item.instance_id].prompt_tokens
