"""medbench/random: a seeded per-item uniform choice, stored as text like any model's reply."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from pipelines.engine.generations import Generation, GenerationStore
from pipelines.backends.base import PromptItem
from pipelines.backends.rule import UniformChoiceGenerator, uniform_choice
from pipelines.tasks.clinicalqa.parsing.v1 import parse_answer_v1 as parse_answer
from support.plugins import specs as load_specs


def _items(n: int) -> list[PromptItem]:
    return [PromptItem(instance_id=str(i), prompt="p") for i in range(n)]


def test_letters_are_per_item_and_seeded() -> None:
    letters = [uniform_choice(7, str(i)) for i in range(5000)]
    assert letters == [uniform_choice(7, str(i)) for i in range(5000)]
    assert letters != [uniform_choice(8, str(i)) for i in range(5000)]
    counts = collections.Counter(letters)
    assert set(counts) == set("ABCDE")
    assert all(900 <= c <= 1100 for c in counts.values()), counts


def test_generator_writes_parsable_answers_in_any_order(tmp_path: Path) -> None:
    items = _items(1200)
    a = GenerationStore(tmp_path / "a.jsonl")
    UniformChoiceGenerator(3).generate(items, a, lambda _: None)
    b = GenerationStore(tmp_path / "b.jsonl")
    UniformChoiceGenerator(3).generate(list(reversed(items)), b, lambda _: None)
    outs_a = {k: g.output for k, g in a.load().items()}
    assert outs_a == {k: g.output for k, g in b.load().items()}
    assert len(outs_a) == 1200
    for iid, text in outs_a.items():
        assert parse_answer(text).prediction == uniform_choice(3, iid)


def test_generator_resumes_without_rewriting(tmp_path: Path) -> None:
    store = GenerationStore(tmp_path / "s.jsonl")
    store.append([Generation(instance_id="0", output="kept")])
    UniformChoiceGenerator(3).generate(_items(10), store, lambda _: None)
    outputs = store.load()
    assert outputs["0"].output == "kept"
    assert len(outputs) == 10
    assert len(store.path.read_text(encoding="utf-8").splitlines()) == 10


def test_from_the_model_spec() -> None:
    spec = load_specs().model("medbench/random")
    generator = UniformChoiceGenerator.from_settings(spec.settings)
    assert generator.seed == spec.settings.seed
    assert UniformChoiceGenerator.from_settings({"rule": "uniform_choice", "seed": 7}).seed == 7
    with pytest.raises(ValueError, match="not 'uniform_choice'"):
        UniformChoiceGenerator.from_settings({"rule": "neg_last_map"})
    with pytest.raises(ValueError, match="Expected `int`, got `str` - at `\\$.seed`"):
        UniformChoiceGenerator.from_settings({"rule": "uniform_choice", "seed": "1"})
