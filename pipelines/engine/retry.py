"""Retrying transient failures of remote services, with exponential backoff: written once.

Three clients talk to servers that fail transiently (the Hugging Face hub, the VitalDB open-data
API, OpenAI-compatible chat servers): 429 rate limits, 5xx while a server restarts, dropped
connections. Each needs the same loop (try, decide whether the failure is worth another attempt,
wait, give up after a fixed number of attempts with the last problem in the message) but with its
own timing, so the loop lives here and each client passes a ``Backoff``. A single attempt reports
a transient failure by returning ``Again`` (what went wrong, the server's Retry-After if it sent
one); a permanent failure is simply raised. Clock and sleep are parameters, so tests check the
delays without waiting for them.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Again:
    """An attempt failed in a way worth retrying. ``error``: the exception, when there was one."""

    problem: str
    retry_after: float | None = None
    error: BaseException | None = None


class RetriesExhausted(RuntimeError):
    """Every attempt failed transiently; ``last`` is the last failure."""

    def __init__(self, last: Again, attempts: int):
        super().__init__(f"giving up after {attempts} attempts: {last.problem}")
        self.last = last
        self.attempts = attempts


@dataclass
class Backoff:
    """How long to wait before retry number ``retry`` (0 = after the first failed attempt).

    ``base_s * 2**retry``, at most ``max_s``. With ``jitter`` (a random generator) the wait is half
    of that plus a uniformly random part of up to the other half, so clients that failed together do
    not retry together. A server's Retry-After lengthens the wait (never shortens it), up to
    ``retry_after_max_s`` (default ``max_s``).
    """

    base_s: float
    max_s: float = math.inf
    jitter: random.Random | None = None
    retry_after_max_s: float | None = None

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        ceiling = min(self.max_s, self.base_s * 2**retry)
        delay = ceiling / 2 + self.jitter.uniform(0, ceiling / 2) if self.jitter is not None else ceiling
        if retry_after is not None:
            cap = self.max_s if self.retry_after_max_s is None else self.retry_after_max_s
            delay = max(delay, min(retry_after, cap))
        return delay


OnRetry = Callable[[Again, int, float], None]  # (failure, retry number from 1, delay in seconds)


def retry(
    attempt: Callable[[], T | Again],
    attempts: int,
    backoff: Backoff,
    on_retry: OnRetry | None = None,
    sleep: Callable[[float], None] | None = None,
) -> T:
    """Call ``attempt`` up to ``attempts`` times, waiting ``backoff.delay`` between calls while it
    returns ``Again``; raise ``RetriesExhausted`` when the last one does too."""
    for i in range(attempts):
        outcome = attempt()
        if not isinstance(outcome, Again):
            return outcome
        if i == attempts - 1:
            raise RetriesExhausted(outcome, attempts)
        delay = backoff.delay(i, outcome.retry_after)
        if on_retry is not None:
            on_retry(outcome, i + 1, delay)
        (sleep or time.sleep)(delay)
    raise ValueError("attempts must be >= 1")


async def retry_async(
    attempt: Callable[[], Awaitable[T | Again]],
    attempts: int,
    backoff: Backoff,
    sleep: Callable[[float], Awaitable[None]],
    on_retry: OnRetry | None = None,
) -> T:
    """``retry`` for coroutines (``sleep`` is e.g. ``asyncio.sleep``)."""
    for i in range(attempts):
        outcome = await attempt()
        if not isinstance(outcome, Again):
            return outcome
        if i == attempts - 1:
            raise RetriesExhausted(outcome, attempts)
        delay = backoff.delay(i, outcome.retry_after)
        if on_retry is not None:
            on_retry(outcome, i + 1, delay)
        await sleep(delay)
    raise ValueError("attempts must be >= 1")


def retry_on_exception(
    call: Callable[[], T],
    transient: Callable[[BaseException], bool],
    attempts: int,
    backoff: Backoff,
    on_retry: OnRetry | None = None,
    sleep: Callable[[float], None] | None = None,
) -> T:
    """Retry ``call`` while it raises an exception ``transient`` accepts; the last such exception
    (or any other at once) propagates unchanged."""

    def attempt() -> T | Again:
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - re-raised unless transient
            if not transient(exc):
                raise
            return Again(problem=f"{type(exc).__name__}: {exc}", error=exc)

    try:
        return retry(attempt, attempts, backoff, on_retry, sleep)
    except RetriesExhausted as exhausted:
        error = exhausted.last.error
    assert error is not None
    raise error  # outside the handler: the exception's own chain stays as it was


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
