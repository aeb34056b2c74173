"""Kill -9 a real generation process mid-run, start it again: no finished item is redone, and every
item ends in the store exactly once."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.loopback_chat_server import LoopbackChatServer, Reply

from pipelines.engine.generations import GenerationStore
from pipelines.backends.tiny_llm import build_tiny_llm
from support.paths import REPO, SUPPORT

DRIVER = SUPPORT / "resume_driver.py"
N_ITEMS = 60
SAFETY_LIMIT_S = 180  # a bound on waiting for a stuck child, not a timing assertion


def driver(*args: str) -> list[str]:
    return [sys.executable, str(DRIVER), *args]


def stored_lines(path: Path) -> list[str]:
    """Complete lines only: a line torn by the kill is not a finished item."""
    if not path.exists():
        return []
    data = path.read_bytes()
    return [json.loads(line)["instance_id"] for line in data[: data.rfind(b"\n") + 1].splitlines()]


def run_and_kill(cmd: list[str], store: Path, after_lines: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + SAFETY_LIMIT_S
    try:
        while len(stored_lines(store)) < after_lines:
            if proc.poll() is not None:
                pytest.fail(f"the run ended before it could be killed: {proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail("the run checkpointed nothing within the safety limit")
            time.sleep(0.005)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL


def run_to_end(cmd: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=SAFETY_LIMIT_S)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def assert_each_item_exactly_once(store: Path) -> None:
    counts = collections.Counter(stored_lines(store))
    assert set(counts) == {f"item{i:03d}" for i in range(N_ITEMS)}
    assert set(counts.values()) == {1}
    assert len(GenerationStore(store).load()) == N_ITEMS


def test_openai_run_killed_and_restarted_redoes_no_finished_item(tmp_path):
    store = tmp_path / "gen.jsonl"
    with LoopbackChatServer(lambda instance_id, attempt: Reply(delay_s=0.03)) as server:
        cmd = driver("openai", "--store", str(store), "--n", str(N_ITEMS), "--base-url", server.base_url)
        run_and_kill(cmd, store, after_lines=8)
        finished = set(GenerationStore(store).load())
        asked_before_kill = len(server.requests)
        assert 8 <= len(finished) < N_ITEMS

        output = run_to_end(cmd)
        assert f"{len(finished)} of {N_ITEMS} already generated" in output
        second_run = {r.instance_id for r in server.requests[asked_before_kill:]}
        assert not second_run & finished
        for instance_id in finished:
            assert server.attempts(instance_id) == 1
    assert_each_item_exactly_once(store)


@pytest.mark.slow  # two processes that import torch and transformers: ~25 s on 2 cores
def test_transformers_run_killed_and_restarted_redoes_no_finished_item(tmp_path):
    model = build_tiny_llm(tmp_path / "tiny", seed=0)
    store, calls = tmp_path / "gen.jsonl", tmp_path / "calls.txt"
    cmd = driver(
        "transformers", "--store", str(store), "--n", str(N_ITEMS), "--model", str(model), "--calls", str(calls)
    )
    run_and_kill(cmd, store, after_lines=6)
    finished = set(GenerationStore(store).load())
    assert 6 <= len(finished) < N_ITEMS

    output = run_to_end(cmd)
    assert f"{len(finished)} of {N_ITEMS} already generated" in output
    handed_to_model = collections.Counter(calls.read_text().split())
    for instance_id in finished:
        assert handed_to_model[instance_id] == 1
    assert_each_item_exactly_once(store)
