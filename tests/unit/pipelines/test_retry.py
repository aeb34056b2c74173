"""The one retry loop: attempt counts, backoff, Retry-After, giving up, with a fake clock and sleep."""

from __future__ import annotations

import asyncio
import random

import pytest

from pipelines.engine.retry import Again, Backoff, RetriesExhausted, parse_retry_after, retry, retry_async, retry_on_exception


class FakeClock:
    """Sleeping advances a fake clock and records the delay; nothing waits."""

    def __init__(self) -> None:
        self.now = 0.0
        self.delays: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.now += seconds

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)


class Script:
    """An attempt that answers from a list: ``Again`` values, exceptions to raise, then a result."""

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.calls = 0

    def __call__(self):
        self.calls += 1
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def test_succeeds_after_transient_failures_with_exponential_backoff() -> None:
    clock = FakeClock()
    seen: list[tuple[str, int, float]] = []
    attempt = Script(Again("HTTP 503"), Again("HTTP 502"), Again("HTTP 500"), "ok")
    result = retry(attempt, 7, Backoff(0.5, 60.0), on_retry=lambda a, n, d: seen.append((a.problem, n, d)),
                   sleep=clock.sleep)
    assert result == "ok" and attempt.calls == 4
    assert clock.delays == [0.5, 1.0, 2.0]
    assert seen == [("HTTP 503", 1, 0.5), ("HTTP 502", 2, 1.0), ("HTTP 500", 3, 2.0)]


def test_gives_up_after_the_last_attempt_without_sleeping_after_it() -> None:
    clock = FakeClock()
    attempt = Script(*[Again(f"HTTP 50{i}") for i in range(3)])
    with pytest.raises(RetriesExhausted) as info:
        retry(attempt, 3, Backoff(1.0), sleep=clock.sleep)
    assert attempt.calls == 3 and clock.delays == [1.0, 2.0]
    assert info.value.attempts == 3 and info.value.last.problem == "HTTP 502"
    assert "giving up after 3 attempts: HTTP 502" in str(info.value)


def test_one_attempt_means_no_retry() -> None:
    clock = FakeClock()
    with pytest.raises(RetriesExhausted):
        retry(Script(Again("x")), 1, Backoff(1.0), sleep=clock.sleep)
    assert clock.delays == []


def test_a_permanent_failure_is_raised_at_once() -> None:
    clock = FakeClock()
    attempt = Script(Again("HTTP 503"), ValueError("HTTP 404"), "never")
    with pytest.raises(ValueError, match="404"):
        retry(attempt, 5, Backoff(1.0), sleep=clock.sleep)
    assert attempt.calls == 2 and clock.delays == [1.0]


def test_backoff_is_capped_and_retry_after_lengthens_up_to_its_own_cap() -> None:
    capped = Backoff(0.5, max_s=4.0)
    assert [capped.delay(i) for i in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert capped.delay(0, retry_after=3.0) == 3.0  # longer than the backoff: honoured
    assert capped.delay(3, retry_after=1.0) == 4.0  # shorter: never shortens the wait
    assert capped.delay(0, retry_after=120.0) == 4.0  # capped by max_s by default
    assert Backoff(1.0, 60.0, retry_after_max_s=900.0).delay(0, retry_after=120.0) == 120.0
    assert Backoff(1.0, 60.0, retry_after_max_s=900.0).delay(0, retry_after=5000.0) == 900.0
    assert Backoff(1.0).delay(10) == 1024.0  # no cap unless one is given


def test_retry_after_reaches_the_sleep() -> None:
    clock = FakeClock()
    retry(Script(Again("HTTP 429", retry_after=7.0), "ok"), 3, Backoff(0.5, 60.0), sleep=clock.sleep)
    assert clock.delays == [7.0]


def test_jitter_stays_within_half_and_whole_of_the_ceiling_and_is_seeded() -> None:
    a = [Backoff(1.0, 16.0, jitter=random.Random(3)).delay(i) for i in range(8)]
    b = [Backoff(1.0, 16.0, jitter=random.Random(3)).delay(i) for i in range(8)]
    assert a == b
    for i, delay in enumerate(a):
        ceiling = min(16.0, 2.0**i)
        assert ceiling / 2 <= delay <= ceiling


def test_async_retry_uses_the_given_sleep() -> None:
    clock = FakeClock()

    async def main() -> str:
        script = Script(Again("timeout"), Again("HTTP 503", retry_after=2.5), "done")

        async def attempt():
            return script()

        return await retry_async(attempt, 4, Backoff(1.0, 60.0), clock.async_sleep)

    assert asyncio.run(main()) == "done"
    assert clock.delays == [1.0, 2.5]


def test_async_retry_gives_up() -> None:
    clock = FakeClock()

    async def attempt():
        return Again("HTTP 500")

    with pytest.raises(RetriesExhausted) as info:
        asyncio.run(retry_async(attempt, 3, Backoff(1.0), clock.async_sleep))
    assert info.value.attempts == 3 and clock.delays == [1.0, 2.0]


class Transient(Exception):
    pass


def test_retry_on_exception_reraises_the_last_transient_error_unchanged() -> None:
    clock = FakeClock()
    cause = OSError("socket")
    last = Transient("503 again")
    last.__cause__ = cause
    attempt = Script(Transient("503"), Transient("502"), last)
    messages: list[str] = []
    with pytest.raises(Transient) as info:
        retry_on_exception(attempt, lambda e: isinstance(e, Transient), 3, Backoff(1.0),
                           on_retry=lambda a, n, d: messages.append(f"{a.error} retry {n} in {d:.0f}s"),
                           sleep=clock.sleep)
    assert info.value is last and info.value.__cause__ is cause
    assert clock.delays == [1.0, 2.0] and messages == ["503 retry 1 in 1s", "502 retry 2 in 2s"]


def test_retry_on_exception_does_not_retry_other_errors() -> None:
    clock = FakeClock()
    attempt = Script(KeyError("no"), "never")
    with pytest.raises(KeyError):
        retry_on_exception(attempt, lambda e: isinstance(e, Transient), 4, Backoff(1.0), sleep=clock.sleep)
    assert attempt.calls == 1 and clock.delays == []


def test_retry_on_exception_returns_the_value() -> None:
    clock = FakeClock()
    attempt = Script(Transient("x"), 42)
    assert retry_on_exception(attempt, lambda e: isinstance(e, Transient), 4, Backoff(1.0), sleep=clock.sleep) == 42
    assert clock.delays == [1.0]


def test_parse_retry_after() -> None:
    assert parse_retry_after("7") == 7.0 and parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(None) is None and parse_retry_after("") is None and parse_retry_after("soon") is None
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412480.0) == pytest.approx(30.0)


# ---- the three clients keep their own timing --------------------------------------------------


def test_vitaldb_opener_backoff_honours_whole_second_retry_after(tmp_path, monkeypatch) -> None:
    import httpx

    from pipelines.datasets.vitaldb.openers import HttpOpener, VitaldbSourceError

    clock = FakeClock()
    monkeypatch.setattr("pipelines.datasets.vitaldb.openers.time.sleep", clock.sleep)
    answers = [
        httpx.Response(503, headers={"retry-after": "3"}),
        httpx.Response(429, headers={"retry-after": "1.5"}),  # not whole seconds: ignored, as before
        httpx.ConnectError("refused"),
        httpx.Response(200, stream=httpx.ByteStream(b"body")),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    opener = HttpOpener("http://vitaldb.test", tmp_path, retries=6, backoff_s=0.5, max_backoff_s=60.0)
    opener._client = httpx.Client(transport=httpx.MockTransport(handler))
    assert opener.read("cases", lambda b: b, "cases") == b"body"
    assert clock.delays == [3.0, 1.0, 2.0]
    assert (tmp_path / "vitaldb.test" / "cases").read_bytes() == b"body"

    answers[:] = [httpx.Response(500) for _ in range(3)]
    opener.retries = 2
    with pytest.raises(VitaldbSourceError, match="failed after 3 attempts; last problem: HTTP 500"):
        opener.read("trks", lambda b: b, "tracks")
    answers[:] = [httpx.Response(404)]
    with pytest.raises(VitaldbSourceError, match="answered HTTP 404"):
        opener.read("other", lambda b: b, "other")


def test_clinicalqa_retries_transient_hub_errors_four_times_doubling_from_one_second(monkeypatch) -> None:
    from pipelines.datasets.clinicalqa import hub as clinicalqa

    clock = FakeClock()
    monkeypatch.setattr("pipelines.datasets.clinicalqa.hub.time.sleep", clock.sleep)
    monkeypatch.setattr(clinicalqa, "_is_transient", lambda exc: isinstance(exc, Transient))
    log: list[str] = []
    attempt = Script(*[Transient(f"503 #{i}\nmore") for i in range(4)])
    with pytest.raises(Transient, match="503 #3"):
        clinicalqa._with_retries("listing", attempt, log.append)
    assert attempt.calls == 4 and clock.delays == [1.0, 2.0, 4.0]
    assert log[0] == "clinicalqa: listing failed (Transient: 503 #0); retry 1 in 1s"


def test_openai_generator_delays_are_seeded_jitter_with_retry_after_up_to_fifteen_minutes() -> None:
    from pipelines.backends.openai_backend import OpenAIChatGenerator

    gen = OpenAIChatGenerator("http://127.0.0.1:9/v1", "m", 8, backoff_base_s=1.0, backoff_max_s=60.0, seed=5)
    rng = random.Random(5)
    expected = []
    for i in range(4):
        ceiling = min(60.0, 2.0**i)
        expected.append(ceiling / 2 + rng.uniform(0, ceiling / 2))
    assert [gen.retry_delay(i, None) for i in range(4)] == expected
    assert gen.retry_delay(0, 600.0) == 600.0 and gen.retry_delay(0, 5000.0) == 900.0
