"""The openai backend against a scripted loopback server: retries, backoff, timeouts, the key."""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import traceback

import pytest
from support.loopback_chat_server import LoopbackChatServer, Reply

from pipelines.engine.generations import GenerationStore
from pipelines.backends.availability import BackendUnavailable, check_backend
from pipelines.backends.base import PromptItem
from pipelines.backends.openai_backend import OpenAIChatGenerator, OpenAIRequestError, parse_retry_after

SECRET = "sk-test-5f1a9c0e-never-show-me"
KEY_ENV = "MEDBENCH_TEST_API_KEY"


def items(*ids: str) -> list[PromptItem]:
    return [PromptItem(instance_id=i, prompt=f"[id={i}] 문제: 흉통의 원인은? 정답: X") for i in ids]


class SleepRecorder:
    """Stands in for asyncio.sleep so backoff delays are checked without waiting for them."""

    def __init__(self):
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


@pytest.fixture
def api_key(monkeypatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def test_retries_429_and_503_with_backoff_then_records_answer_and_usage(api_key, tmp_path):
    def script(instance_id: str, attempt: int) -> Reply:
        if attempt == 0:
            return Reply(429, {"Retry-After": "3"}, {"error": {"message": "rate limited"}})
        if attempt == 1:
            return Reply(503, {}, "upstream overloaded")
        return Reply()

    sleep = SleepRecorder()
    logs: list[str] = []
    store = GenerationStore(tmp_path / "gen.jsonl")
    with LoopbackChatServer(script) as server:
        generator = OpenAIChatGenerator(
            server.base_url, "served-model", max_new_tokens=64, api_key_env=KEY_ENV, concurrency=1, sleep=sleep
        )
        usage = generator.generate(items("a", "b"), store, logs.append)

    assert server.attempts("a") == server.attempts("b") == 3
    # Per item: the first wait honours Retry-After (3 s); the second is backoff attempt 1,
    # between half and all of base * 2 = 2 s.
    assert len(sleep.delays) == 4
    for first, second in (sleep.delays[0:2], sleep.delays[2:4]):
        assert first >= 3.0
        assert 1.0 <= second <= 2.0
    assert any("HTTP 429" in line for line in logs) and any("HTTP 503" in line for line in logs)

    request = server.requests[-1]
    assert request.authorization == f"Bearer {SECRET}"
    assert request.body["temperature"] == 0
    assert request.body["max_tokens"] == 64
    assert request.body["model"] == "served-model"
    assert "stop" not in request.body
    assert request.body["messages"] == [{"role": "user", "content": items("b")[0].prompt}]

    stored = store.load()
    assert set(stored) == {"a", "b"}
    assert stored["a"].output.endswith("정답: A (a)")
    assert (stored["a"].prompt_tokens, stored["a"].completion_tokens) == (11, 5)
    assert (usage.prompt_tokens, usage.completion_tokens) == (22, 10)
    assert usage.hardware == f"openai-compatible server {server.base_url}"
    assert SECRET not in store.path.read_text()
    assert not any(SECRET in line for line in logs)


def test_backoff_grows_exponentially_with_jitter_up_to_the_cap():
    generator = OpenAIChatGenerator("http://127.0.0.1:9/v1", "m", 8, backoff_base_s=1.0, backoff_max_s=16.0, seed=3)
    delays = [generator.retry_delay(attempt, None) for attempt in range(8)]
    for attempt, delay in enumerate(delays):
        ceiling = min(16.0, 2.0**attempt)
        assert ceiling / 2 <= delay <= ceiling
    assert len(set(delays)) == len(delays)  # jittered, not a fixed ladder
    assert generator.retry_delay(0, retry_after=42.0) == 42.0


def test_a_stalled_request_times_out_and_is_retried(tmp_path):
    def script(instance_id: str, attempt: int) -> Reply:
        return Reply(delay_s=2.0) if attempt == 0 else Reply()

    logs: list[str] = []
    store = GenerationStore(tmp_path / "gen.jsonl")
    with LoopbackChatServer(script) as server:
        generator = OpenAIChatGenerator(server.base_url, "m", 16, timeout_s=0.3, backoff_base_s=0.01)
        generator.generate(items("slow"), store, logs.append)
    assert server.attempts("slow") == 2
    assert any("no answer within 0.3s" in line for line in logs)
    assert set(store.load()) == {"slow"}


def test_gives_up_after_max_retries_but_keeps_every_finished_answer(tmp_path):
    def script(instance_id: str, attempt: int) -> Reply:
        return Reply(500, {}, "boom") if instance_id == "bad" else Reply()

    store = GenerationStore(tmp_path / "gen.jsonl")
    ids = ("ok1", "ok2", "bad", "ok3")
    with LoopbackChatServer(script) as server:
        generator = OpenAIChatGenerator(server.base_url, "m", 16, concurrency=2, max_retries=2, sleep=SleepRecorder())
        with pytest.raises(OpenAIRequestError, match="bad: giving up after 3 attempts.*HTTP 500"):
            generator.generate(items(*ids), store, lambda _: None)
    assert server.attempts("bad") == 3
    # Answers that arrived before the failure are checkpointed; the rerun asks only for the rest.
    kept = set(store.load())
    assert "bad" not in kept and kept <= {"ok1", "ok2", "ok3"} and kept
    with LoopbackChatServer() as server:
        OpenAIChatGenerator(server.base_url, "m", 16).generate(items(*ids), store, lambda _: None)
        assert {r.instance_id for r in server.requests} == set(ids) - kept
    assert set(store.load()) == set(ids)


def test_a_client_error_fails_at_once_and_an_echoed_key_is_redacted(api_key, tmp_path):
    def script(instance_id: str, attempt: int) -> Reply:
        return Reply(401, {}, {"error": {"message": f"Incorrect API key provided: {SECRET[3:]}"}})

    logs: list[str] = []
    store = GenerationStore(tmp_path / "gen.jsonl")
    with LoopbackChatServer(script) as server:
        generator = OpenAIChatGenerator(server.base_url, "m", 16, api_key_env=KEY_ENV, sleep=SleepRecorder())
        with pytest.raises(OpenAIRequestError) as caught:
            generator.generate(items("x"), store, logs.append)
    assert server.attempts("x") == 1
    assert server.requests[0].authorization == f"Bearer {SECRET}"
    shown = "".join(traceback.format_exception(caught.value)) + repr(caught.value) + repr(generator)
    assert "HTTP 401" in shown and "<redacted>" in shown
    assert SECRET[3:] not in shown and SECRET not in shown
    assert not any(SECRET[3:] in line for line in logs)
    assert not store.path.exists() or SECRET[3:] not in store.path.read_text()


def test_missing_key_variable_is_reported_without_a_request(monkeypatch, tmp_path):
    monkeypatch.delenv(KEY_ENV, raising=False)
    settings = {"base_url": "http://127.0.0.1:9/v1", "api_key_env": KEY_ENV}
    assert check_backend("openai", settings) == f"not runnable here: the API key variable {KEY_ENV} is not set"
    with LoopbackChatServer() as server:
        generator = OpenAIChatGenerator(server.base_url, "m", 16, api_key_env=KEY_ENV)
        with pytest.raises(BackendUnavailable, match=KEY_ENV):
            generator.generate(items("x"), GenerationStore(tmp_path / "g.jsonl"), lambda _: None)
        assert server.requests == []


def test_concurrency_is_bounded(tmp_path):
    import threading

    active = 0
    peak = 0
    lock = threading.Lock()

    def script(instance_id: str, attempt: int) -> Reply:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        threading.Event().wait(0.05)
        with lock:
            active -= 1
        return Reply()

    store = GenerationStore(tmp_path / "gen.jsonl")
    with LoopbackChatServer(script) as server:
        OpenAIChatGenerator(server.base_url, "m", 16, concurrency=3).generate(
            items(*(f"i{n}" for n in range(12))), store, lambda _: None
        )
    assert 1 < peak <= 3
    assert len(store.load()) == 12


def test_retry_after_accepts_seconds_and_http_dates():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    now = dt.datetime(2026, 11, 1, 12, 0, 0, tzinfo=dt.UTC)
    later = email.utils.format_datetime(now + dt.timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(later, now=now.timestamp()) == pytest.approx(30.0)
