"""Which language-model backends can run here, decided without loading (or importing) a model."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pipelines.engine.generations import GenerationStore
from pipelines.backends import availability
from pipelines.backends.availability import BackendUnavailable, check_backend
from pipelines.backends.base import PromptItem
from pipelines.backends.transformers_backend import TransformersGenerator
from pipelines.backends.vllm_backend import VllmGenerator


def test_backend_modules_import_without_torch_vllm_or_transformers():
    code = (
        "import sys\n"
        "import pipelines.backends.availability, pipelines.backends.accounting, pipelines.backends.tiny_llm\n"
        "import pipelines.backends.transformers_backend, pipelines.backends.vllm_backend, pipelines.backends.openai_backend\n"
        "heavy = sorted({'torch', 'transformers', 'vllm', 'tokenizers'} & set(sys.modules))\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_transformers_needs_its_extra(monkeypatch, tmp_path):
    monkeypatch.setattr(availability, "_has_module", lambda name: name not in {"torch", "transformers"})
    reason = check_backend("transformers", {"model": "m"})
    assert reason == (
        "not runnable here: needs the transformers extra (pip install -e .[transformers]); missing torch, transformers"
    )
    generator = TransformersGenerator("any/model", max_new_tokens=4)
    with pytest.raises(BackendUnavailable) as caught:
        generator.generate([PromptItem("a", "hi")], GenerationStore(tmp_path / "g.jsonl"), lambda _: None)
    assert caught.value.reason == reason


def test_transformers_on_cuda_needs_a_gpu(monkeypatch):
    monkeypatch.setattr(availability, "_cuda_device_count", lambda: 0)
    assert "no CUDA GPU" in check_backend("transformers", {"model": "m", "device": "cuda"})
    assert check_backend("transformers", {"model": "m", "device": "auto"}) is None  # falls back to the CPU


def test_vllm_needs_the_package_and_enough_gpus(monkeypatch):
    monkeypatch.setattr(availability, "_has_module", lambda name: name != "vllm")
    assert check_backend("vllm", {"model": "m"}) == "not runnable here: needs vllm (pip install -e .[vllm]) and an NVIDIA GPU"

    monkeypatch.setattr(availability, "_has_module", lambda name: True)
    monkeypatch.setattr(availability, "_is_vllm_cpu_build", lambda: False)
    monkeypatch.setattr(availability, "_cuda_device_count", lambda: 0)
    assert "has none" in check_backend("vllm", {"model": "m"})
    monkeypatch.setattr(availability, "_cuda_device_count", lambda: 2)
    assert check_backend("vllm", {"model": "m", "engine": {"tensor_parallel_size": 2}}) is None
    assert "needs 4 GPUs, this machine has 2" in check_backend(
        "vllm", {"model": "m", "engine": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}}
    )
    monkeypatch.setattr(availability, "_is_vllm_cpu_build", lambda: True)
    assert check_backend("vllm", {"model": "m"}) is None  # the CPU build runs without a GPU


def test_vllm_generator_without_vllm_is_unavailable_not_a_crash(monkeypatch, tmp_path):
    if availability._has_module("vllm"):
        pytest.fail("this test belongs to the main environment, which has no vllm")
    with pytest.raises(BackendUnavailable, match=r"needs vllm \(pip install -e \.\[vllm\]\)"):
        VllmGenerator("any/model", 4).generate([PromptItem("a", "hi")], GenerationStore(tmp_path / "g.jsonl"), print)


def test_openai_needs_a_url_and_its_key(monkeypatch):
    monkeypatch.delenv("MEDBENCH_TEST_URL", raising=False)
    monkeypatch.delenv("MEDBENCH_TEST_KEY", raising=False)
    assert "sets neither base_url nor base_url_env" in check_backend("openai", {})
    assert "MEDBENCH_TEST_URL is unset" in check_backend("openai", {"base_url_env": "MEDBENCH_TEST_URL"})
    monkeypatch.setenv("MEDBENCH_TEST_URL", "http://127.0.0.1:8000/v1")
    assert availability.resolve_base_url({"base_url_env": "MEDBENCH_TEST_URL"}) == "http://127.0.0.1:8000/v1"
    settings = {"base_url_env": "MEDBENCH_TEST_URL", "api_key_env": "MEDBENCH_TEST_KEY"}
    assert check_backend("openai", settings) == "not runnable here: the API key variable MEDBENCH_TEST_KEY is not set"
    monkeypatch.setenv("MEDBENCH_TEST_KEY", "sk-1")
    assert check_backend("openai", settings) is None


def test_other_backends_have_no_machine_requirements():
    for backend in ("rule", "sklearn", "replay"):
        assert check_backend(backend, {}) is None
