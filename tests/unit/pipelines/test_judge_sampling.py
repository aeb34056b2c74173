"""A rubric judge decodes at its spec's temperature, each judge sample with its own seed, through the
openai, vllm and transformers backends (docs/adding-a-task.md, "The rubric kind and clinicalqa-open")."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import msgspec
import pytest
from support.loopback_chat_server import LoopbackChatServer
from support.model_specs import specs_with_served
from support.plugins import builtin_plugins

from pipelines.backends.base import PromptItem, Sampling
from pipelines.engine.specs import load_specs
from pipelines.tasks.clinicalqa_open.family import resolve_judge
from pipelines.tasks.clinicalqa_open.judging import AnswerAndJudge
from medbench.layout import DataDir

CRITERIA = [{"id": "gold", "text": "names it: X", "points": 5.0, "tags": []}]


def _grade_through_openai(tmp_path, temperature: float, samples: int) -> list[dict]:
    """The task's judge resolved for ``acme/served`` (an openai spec at a loopback server), grading two
    answers: the request bodies the server received."""
    with LoopbackChatServer() as server:
        plugins = builtin_plugins()
        specs = load_specs(specs_with_served(tmp_path / "specs", server.base_url), plugins)
        task = specs.tasks["clinicalqa-open@0"]
        settings = msgspec.structs.replace(task.settings, judge_temperature=temperature, judge_samples=samples)
        judge_spec = specs.models["acme/served"]
        ev = SimpleNamespace(task=SimpleNamespace(settings=settings), judge=judge_spec,
                             judge_backend=specs.backend_of(judge_spec), partition_key="clinicalqa-open@0|m")
        data = DataDir(tmp_path / "data")
        judge = resolve_judge(ev, data)
        items = [{"instance_id": i, "prompt": f"q{i}", "criteria": CRITERIA} for i in ("1", "2")]
        problem = AnswerAndJudge(items=items, prompt_hash="h", max_new_tokens=8, temperature=0.0,
                                 judge_for=lambda d: judge, judge_template="{prompt}|{answer}|{criteria}",
                                 table=lambda *a: None, config={})
        problem.grade(judge, {"1": "X", "2": "Y"}, "answers-key", data, lambda m: None)
        return [r.body for r in server.requests]


def test_an_openai_judge_sends_the_spec_temperature_and_a_seed_per_sample(tmp_path):
    bodies = _grade_through_openai(tmp_path, 0.7, 3)
    assert len(bodies) == 6  # two answers, three samples each: one call grades all of an answer's criteria
    assert {b["temperature"] for b in bodies} == {0.7}
    assert len({b["seed"] for b in bodies}) == 6  # every sample of every answer draws on its own
    assert sorted(b["seed"] for b in bodies) == sorted(Sampling(0.7).item_seed(f"{i}#judge-{s}")
                                                       for i in ("1", "2") for s in range(3))


def test_an_openai_judge_at_temperature_zero_stays_greedy(tmp_path):
    bodies = _grade_through_openai(tmp_path, 0.0, 1)
    assert len(bodies) == 2 and all(b["temperature"] == 0 and "seed" not in b for b in bodies)


def test_the_vllm_generator_passes_temperature_and_seeds_to_the_engine(tmp_path, monkeypatch):
    """vllm itself runs on GPU machines only: a stand-in module records the SamplingParams the
    generator builds and the engine is handed."""
    from pipelines.backends.vllm_backend import VllmGenerator
    from pipelines.engine.generations import GenerationStore

    made: list[dict] = []

    class SamplingParams:
        def __init__(self, **kw):
            made.append(kw)
            self.kw = kw

    vllm = types.ModuleType("vllm")
    vllm.SamplingParams = SamplingParams
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = SimpleNamespace(is_cpu=lambda: True)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    handed: list = []

    class Engine:
        def get_tokenizer(self):
            return SimpleNamespace(apply_chat_template=lambda m, **k: m[0]["content"],
                                   encode=lambda text, add_special_tokens: [1, 2])

        def generate(self, prompts, params, use_tqdm):
            handed.append(params)
            out = SimpleNamespace(text="{}", token_ids=[3])
            return [SimpleNamespace(outputs=[out], prompt_token_ids=[1, 2]) for _ in prompts]

    prompts = [PromptItem(f"a#judge-{s}", "grade this") for s in range(2)]
    sampled = VllmGenerator("judge", max_new_tokens=16, sampling=Sampling(0.5))
    sampled._llm = Engine()
    sampled.generate(prompts, GenerationStore(tmp_path / "s.jsonl"), lambda m: None)
    assert [p.kw for p in handed[0]] == made == [
        {"temperature": 0.5, "seed": Sampling(0.5).item_seed(p.instance_id), "max_tokens": 16} for p in prompts]
    assert made[0]["seed"] != made[1]["seed"]
    greedy = VllmGenerator("judge", max_new_tokens=16)
    greedy._llm = Engine()
    greedy.generate(prompts, GenerationStore(tmp_path / "g.jsonl"), lambda m: None)
    assert [p.kw for p in handed[1]] == [{"temperature": 0.0, "max_tokens": 16}] * 2


def test_the_transformers_generator_samples_at_the_temperature_with_a_seed_per_batch(tmp_path):
    """The registry hands the sampling to the generator; its generation config samples at the
    temperature (checked by transformers' own GenerationConfig), and each batch is drawn after seeding
    torch with the batch's seed. No model is loaded: a stand-in model records what generate() got."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from pipelines.backends.settings import TransformersSettings

    backend = builtin_plugins().backends.get("transformers")
    model = SimpleNamespace(slug="x/judge", revision="1", settings=TransformersSettings(model="/nonexistent"),
                            backend="transformers")
    gen = backend.text_generator(model, DataDir(tmp_path), max_new_tokens=12, options=(), sampling=Sampling(0.8))
    tokenizer = SimpleNamespace(pad_token_id=0, eos_token_id=2)
    config = gen.generation_config(transformers.GenerationConfig(top_k=50, top_p=0.9), tokenizer)
    config.validate()
    assert (config.do_sample, config.temperature, config.top_k, config.top_p, config.max_new_tokens) == \
        (True, 0.8, None, None, 12)
    seen: list = []

    class Encoded(dict):
        def to(self, device):
            return self

    class Tokenizer:
        pad_token_id, eos_token_id = 0, 2

        def apply_chat_template(self, messages, **kw):
            return messages[0]["content"]

        def __call__(self, texts, **kw):
            ids = torch.ones((len(texts), 3), dtype=torch.long)
            return Encoded(input_ids=ids, attention_mask=torch.ones_like(ids))

        def decode(self, tokens, skip_special_tokens):
            return "{}"

    class Model:
        device = "cpu"

        def generate(self, input_ids, attention_mask, generation_config):
            seen.append((generation_config.do_sample, generation_config.temperature, torch.initial_seed()))
            return torch.cat([input_ids, torch.full((len(input_ids), 1), 2)], dim=1)

    batch = [PromptItem(f"a#judge-{s}", "grade this") for s in range(2)]
    gen._loaded = (Model(), Tokenizer(), config)
    gen._generate_batch(batch)
    assert seen == [(True, 0.8, gen.batch_seed(batch))]
    assert gen.batch_seed(batch) != gen.batch_seed(batch[:1])
    greedy = backend.text_generator(model, DataDir(tmp_path), max_new_tokens=12, options=())
    plain = greedy.generation_config(transformers.GenerationConfig(top_k=50), tokenizer)
    assert (plain.do_sample, plain.temperature, greedy.batch_seed(batch)) == (False, None, None)
