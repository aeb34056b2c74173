"""A model's ``[settings]`` table is typed by its backend: a wrong key is an error naming file and key."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import msgspec
import pytest

from pipelines.backends.settings import (
    MODEL_SETTINGS,
    HistGradientBoostingSettings,
    OpenAISettings,
    UniformChoiceRule,
    VllmSettings,
    hashed,
    published,
    settings_for,
)
from pipelines.engine.specs import DEFAULT_SPECS_DIR, SpecError
from support.plugins import specs as load_specs

OPENAI_MODEL = """slug = "medbench/served"
name = "A served model"
type = "llm"
provider = "medbench"
provider_model_id = "served"
revision = "1"
description = "An OpenAI-compatible server."
backend = "openai"
tasks = ["clinicalqa@0"]

[settings]
base_url_env = "MEDBENCH_SERVED_URL"
max_new_tokens = 512

[price]
basis = "free"
"""


@pytest.fixture()
def specs_copy(tmp_path: Path) -> Path:
    root = tmp_path / "specs"
    shutil.copytree(DEFAULT_SPECS_DIR, root)
    (root / "models" / "medbench" / "served.toml").write_text(OPENAI_MODEL)
    return root


# (model file, text to replace, replacement, the message after "<file>: ")
BAD = [
    ("medbench/random", "seed = 20261029", "seed = 20261029\nsede = 7",
     "unknown key `settings.sede` (remove it or fix its spelling)"),
    ("medbench/random", "seed = 20261029\n", "", "missing required key `settings.seed`"),
    ("medbench/random", "seed = 20261029", 'seed = "7"', "key `settings.seed`: expected `int`, got `str`"),
    ("medbench/random", 'rule = "uniform_choice"', 'rule = "uniform"', "key `settings.rule`: invalid value 'uniform' (one of: uniform_choice, neg_last_map, linear_extrapolation, matching_judge)"),
    ("medbench/random", 'rule = "uniform_choice"\n', "", "missing required key `settings.rule`"),
    ("medbench/random", '[settings]\nrule = "uniform_choice"\nseed = 20261029\n', "", "missing required key `settings`"),
    ("medbench/neg-last-map", 'rule = "neg_last_map"', 'rule = "neg_last_map"\nfit_seconds = 60',
     "unknown key `settings.fit_seconds` (remove it or fix its spelling)"),
    ("medbench/linear-extrapolation", "ahead_seconds = 60\n", "", "missing required key `settings.ahead_seconds`"),
    ("medbench/logreg-window", "max_iter = 1000", "max_iter = 1000\nlearning_rate = [0.1]",
     "unknown key `settings.learning_rate` (remove it or fix its spelling)"),
    ("medbench/hgb-window", "learning_rate = [0.05, 0.1]", 'learning_rate = "fast"',
     "key `settings.learning_rate`: expected `float | array`, got `str`"),
    ("medbench/hgb-window", 'estimator = "hist_gradient_boosting"', 'estimator = "xgboost"',
     "key `settings.estimator`: invalid value 'xgboost' (one of: logistic_regression, hist_gradient_boosting)"),
    ("medbench/tiny-llama", 'model = "builtin:tiny-llama"\n', "", "missing required key `settings.model`"),
    ("medbench/tiny-llama", "batch_size = 32", "batch_sise = 32",
     "unknown key `settings.batch_sise` (remove it or fix its spelling)"),
    ("google/medgemma-27b-text-it", "tensor_parallel_size = 1", "tensor_paralel_size = 2",
     "unknown key `settings.engine.tensor_paralel_size` (remove it or fix its spelling)"),
    ("google/medgemma-27b-text-it", "max_model_len = 8192", 'max_model_len = "8k"',
     "key `settings.engine.max_model_len`: expected `int | null`, got `str`"),
    ("medbench/served", "max_new_tokens = 512", "max_new_tokens = 512\ntemprature = 0",
     "unknown key `settings.temprature` (remove it or fix its spelling)"),
    ("medbench/served", 'backend = "openai"', 'backend = "openia"', "key `backend`: invalid value 'openia' (one of: openai, replay, rule, sklearn, transformers, vllm)"),
    ("medbench/served", 'backend = "openai"\n', "", "missing required key `backend`"),
    ("medbench/served", 'backend = "openai"', 'backend = "replay"', "unknown key `settings.base_url_env`"),
]


@pytest.mark.parametrize(("slug", "old", "new", "message"), BAD, ids=[f"{b[0]}:{b[3][:40]}" for b in BAD])
def test_a_bad_settings_key_names_the_file_and_the_key(specs_copy: Path, slug, old, new, message):
    path = specs_copy / "models" / f"{slug}.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(SpecError) as err:
        load_specs(specs_copy)
    assert str(err.value).startswith(f"{path}: {message}"), str(err.value)


def test_every_backend_decodes_into_its_own_settings_type(specs_copy: Path):
    specs = load_specs(specs_copy)
    for model in specs.models.values():
        local = {f: "" for f in getattr(model.settings, "local_fields", ())}  # set by the loader (replay_pin)
        settings = msgspec.structs.replace(model.settings, **local)
        assert settings == settings_for(model.backend, hashed(model.settings))
        if model.backend != "replay":  # a replay file is published as its name and sha256
            assert settings == settings_for(model.backend, published(model.settings))
    assert specs.models["medbench/random"].settings == UniformChoiceRule(seed=20261029)
    assert isinstance(specs.models["medbench/hgb-window"].settings, HistGradientBoostingSettings)
    served = specs.models["medbench/served"].settings
    assert served == OpenAISettings(base_url_env="MEDBENCH_SERVED_URL", max_new_tokens=512)
    assert set(MODEL_SETTINGS) == {"rule", "sklearn", "replay", "transformers", "openai", "vllm"}


def test_a_table_with_only_defaults_may_be_left_out(specs_copy: Path):
    path = specs_copy / "models" / "medbench" / "served.toml"
    path.write_text(re.sub(r"\[settings\]\n(.*\n)+?\n", "", path.read_text()))
    assert load_specs(specs_copy).models["medbench/served"].settings == OpenAISettings()


def test_hashed_settings_omit_defaults_and_published_ones_keep_them():
    specs = load_specs()
    random, tiny = specs.models["medbench/random"].settings, specs.models["medbench/tiny-llama"].settings
    assert hashed(random) == published(random) == {"rule": "uniform_choice", "seed": 20261029}
    assert hashed(specs.models["medbench/neg-last-map"].settings) == {"rule": "neg_last_map"}
    assert hashed(tiny) == {"model": "builtin:tiny-llama", "max_new_tokens": 16, "batch_size": 32, "num_threads": 1}
    assert published(tiny) == {
        "model": "builtin:tiny-llama", "seed": 0, "max_new_tokens": 16, "batch_size": 32, "device": "auto",
        "dtype": "auto", "num_threads": 1, "chat_template_kwargs": {},
    }
    logreg = specs.models["medbench/logreg-window"].settings
    assert hashed(logreg) == {"estimator": "logistic_regression", "seed": 20261029}  # its grid is the default grid
    assert published(logreg) == {
        "estimator": "logistic_regression", "below": [65.0, 70.0, 75.0], "recent_seconds": [30, 60],
        "slope_seconds": 60, "first_seconds": 60, "seed": 20261029, "C": [0.01, 0.1, 1.0, 10.0], "max_iter": 1000,
    }


def test_vllm_engine_passes_only_what_the_spec_sets_plus_extra(specs_copy: Path):
    medgemma = load_specs().models["google/medgemma-27b-text-it"].settings
    assert isinstance(medgemma, VllmSettings)
    assert medgemma.engine.kwargs() == {"dtype": "bfloat16", "max_model_len": 8192, "gpu_memory_utilization": 0.9}
    assert medgemma.engine.devices == 1
    path = specs_copy / "models" / "google" / "medgemma-27b-text-it.toml"
    path.write_text(path.read_text().replace(
        "tensor_parallel_size = 1", "tensor_parallel_size = 2\n\n[settings.engine.extra]\nswap_space = 4"))
    engine = load_specs(specs_copy).models["google/medgemma-27b-text-it"].settings.engine
    assert engine.devices == 2
    assert engine.kwargs() == {"dtype": "bfloat16", "max_model_len": 8192, "gpu_memory_utilization": 0.9,
                               "tensor_parallel_size": 2, "swap_space": 4}


def test_settings_built_in_code_are_decoded_strictly():
    assert settings_for("rule", {"rule": "uniform_choice", "seed": 1}) == UniformChoiceRule(seed=1)
    with pytest.raises(ValueError, match="unknown field `sede`"):
        settings_for("rule", {"rule": "uniform_choice", "seed": 1, "sede": 2})
    with pytest.raises(TypeError):
        settings_for("openai", ["base_url"])
