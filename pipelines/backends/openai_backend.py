"""Generation through any OpenAI-compatible chat-completions server (vLLM's server, provider APIs).

A remote server fails in ways a local model does not: rate limits (429), overloaded or restarting
servers (5xx), requests that hang, dropped connections. A 1,045-item run must ride through all of
them: bounded concurrency, a deadline per request, retries with exponential backoff and jitter
(honouring Retry-After), and checkpoints as answers arrive, so a kill loses at most one chunk.

The API key is read from the environment variable the spec names, at call time, and goes only
into the Authorization header: it is never logged, stored, or put into an exception message (a
server that echoes it back has it redacted). No SDK: httpx is already a base dependency.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from pipelines.engine.generations import Generation, GenerationStore
from pipelines.backends.accounting import pending_items, stored_usage
from pipelines.backends.availability import BackendUnavailable, missing_api_key
from pipelines.backends.base import PromptItem, Sampling, Usage
from pipelines.backends.redact import REDACTED, has_userinfo, redact_url
from medbench.specs import query_or_fragment
from pipelines.engine.progress import Progress
from pipelines.engine.retry import Again, Backoff, RetriesExhausted, parse_retry_after, retry_async

RETRYABLE_STATUS = frozenset({408, 409, 429})  # plus every 5xx
MAX_RETRY_AFTER_S = 900.0


class OpenAIRequestError(RuntimeError):
    """A request failed for good (a non-retryable status, or retries exhausted). Never holds the key."""


class OpenAIChatGenerator:
    """Greedy chat completions (temperature 0, ``max_tokens`` = max new tokens, no stop strings), or
    sampled ones where ``sampling`` says so (a rubric judge at its spec's temperature): each request then
    carries that ``temperature`` and its own ``seed`` (``Sampling.item_seed`` of the prompt's id).

    ``base_url`` includes the API version path, as OpenAI clients expect (``http://host:8000/v1``);
    requests go to ``{base_url}/chat/completions``. ``checkpoint_every`` / ``checkpoint_seconds``:
    finished answers are appended to the store once that many have arrived or that long has passed.
    ``extra_body``: more request fields, merged into every request (e.g. vLLM's
    ``{"chat_template_kwargs": {"enable_thinking": false}}``); it cannot override the decoding fields.
    ``sleep`` is the coroutine used to wait between retries (tests record the delays with it).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        max_new_tokens: int,
        api_key_env: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 120.0,
        max_retries: int = 6,
        *,
        checkpoint_every: int = 32,
        checkpoint_seconds: float = 10.0,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 60.0,
        seed: int = 0,
        extra_body: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        if concurrency < 1 or max_new_tokens < 1 or max_retries < 0 or checkpoint_every < 1:
            raise ValueError("concurrency, max_new_tokens and checkpoint_every must be >= 1, max_retries >= 0")
        if has_userinfo(base_url):  # httpx would send it as Basic auth instead of the API key, and log it
            raise ValueError(f"settings.base_url: {redact_url(base_url)} holds credentials (user:password@); "
                             "remove them and name the key's environment variable in settings.api_key_env")
        if (extra := query_or_fragment(base_url)) is not None:  # base_url_env's value is read only now
            raise ValueError(f"settings.base_url: {redact_url(base_url)} has {extra}; requests go to "
                             "{base_url}/chat/completions, so give the server's path only")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.checkpoint_every = checkpoint_every
        self.checkpoint_seconds = checkpoint_seconds
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.extra_body = dict(extra_body or {})
        self.sampling = sampling if sampling is not None and not sampling.greedy else None
        self._rng = random.Random(seed)
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"OpenAIChatGenerator(base_url={self.server!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    @property
    def server(self) -> str:
        """The server's scheme, host and path, without credentials or query (safe to show)."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"

    # -- TextGenerator -----------------------------------------------------------------------

    def generate(self, items: Sequence[PromptItem], store: GenerationStore, log: Callable[[str], None]) -> Usage:
        start = time.monotonic()
        key = self._api_key()
        todo = pending_items(items, store)
        log(f"openai {self.model} at {self.server}: {len(items) - len(todo)} of {len(items)} already generated")
        if todo:
            _run_coroutine(self._run(todo, store, log, key))
        wall = time.monotonic() - start
        return stored_usage(
            items,
            store,
            wall_seconds=wall,
            # The serving machine is held for the run's wall time; only a device_hours-priced spec
            # (e.g. our own `vllm serve`) turns this into cost.
            device_seconds=wall if todo else 0.0,
            hardware=f"openai-compatible server {self.server}",
        )

    # -- internals ---------------------------------------------------------------------------

    def _api_key(self) -> str | None:
        reason = missing_api_key(self.api_key_env)
        if reason is not None:
            raise BackendUnavailable(reason)
        return os.environ[self.api_key_env] if self.api_key_env else None

    async def _run(
        self, todo: list[PromptItem], store: GenerationStore, log: Callable[[str], None], key: str | None
    ) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        progress = Progress(f"generating with {self.model}", len(todo), log)
        semaphore = asyncio.Semaphore(self.concurrency)
        redact = _redactor(key)

        async with httpx.AsyncClient(headers=headers, timeout=self.timeout_s, limits=limits) as client:

            async def one(item: PromptItem) -> Generation:
                async with semaphore:
                    return await self._complete(client, item, log, redact)

            tasks = [asyncio.create_task(one(item)) for item in todo]
            stored: set[str] = set()
            buffer: list[Generation] = []
            last_flush = time.monotonic()

            def flush() -> None:
                nonlocal buffer, last_flush
                store.append(buffer)
                stored.update(g.instance_id for g in buffer)
                buffer, last_flush = [], time.monotonic()

            try:
                for next_done in asyncio.as_completed(tasks):
                    buffer.append(await next_done)
                    progress.advance(1)
                    if len(buffer) >= self.checkpoint_every or time.monotonic() - last_flush >= self.checkpoint_seconds:
                        flush()
            finally:
                # Keep every answer that arrived, even when another request failed for good.
                pending_ids = {g.instance_id for g in buffer}
                for task in tasks:
                    if task.done() and not task.cancelled() and task.exception() is None:
                        gen = task.result()
                        if gen.instance_id not in stored and gen.instance_id not in pending_ids:
                            buffer.append(gen)
                            pending_ids.add(gen.instance_id)
                flush()
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

    async def _complete(
        self, client: httpx.AsyncClient, item: PromptItem, log: Callable[[str], None], redact: Callable[[str], str]
    ) -> Generation:
        payload = {
            **self.extra_body,
            "model": self.model,
            "messages": [{"role": "user", "content": item.prompt}],
            "temperature": 0,
            "max_tokens": self.max_new_tokens,
        }
        if self.sampling is not None:
            payload["temperature"] = self.sampling.temperature
            payload["seed"] = self.sampling.item_seed(item.instance_id)
        url = f"{self.base_url}/chat/completions"

        async def attempt() -> Generation | Again:
            try:
                async with asyncio.timeout(self.timeout_s):  # a deadline for the whole request
                    response = await client.post(url, json=payload)
            except (TimeoutError, httpx.TimeoutException):
                return Again(f"no answer within {self.timeout_s:g}s")
            except httpx.TransportError as exc:
                return Again(f"connection error ({type(exc).__name__})")
            status = response.status_code
            if status == 200:
                return _parse_completion(item, response, redact)
            if status not in RETRYABLE_STATUS and status < 500:
                raise OpenAIRequestError(
                    f"{item.instance_id}: HTTP {status} from {self.server}: {redact(response.text[:300])}"
                ) from None
            return Again(f"HTTP {status}", parse_retry_after(response.headers.get("retry-after")))

        def on_retry(failure: Again, n: int, delay: float) -> None:
            log(f"{item.instance_id}: {failure.problem}; retry {n}/{self.max_retries} in {delay:.2f}s")

        try:
            return await retry_async(attempt, self.max_retries + 1, self._backoff(), self._sleep, on_retry)
        except RetriesExhausted as exc:
            raise OpenAIRequestError(
                f"{item.instance_id}: giving up after {exc.attempts} attempts to {self.server}: {exc.last.problem}"
            ) from None

    def _backoff(self) -> Backoff:
        return Backoff(self.backoff_base_s, self.backoff_max_s, jitter=self._rng, retry_after_max_s=MAX_RETRY_AFTER_S)

    def retry_delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter: half of min(max, base * 2^attempt) plus a random part
        of up to the other half; never shorter than the server's Retry-After (up to 15 minutes)."""
        return self._backoff().delay(attempt, retry_after)


def _parse_completion(item: PromptItem, response: httpx.Response, redact: Callable[[str], str]) -> Generation:
    try:
        body: dict[str, Any] = response.json()
        message = body["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise OpenAIRequestError(
            f"{item.instance_id}: malformed chat completion: {redact(response.text[:300])}"
        ) from None
    usage = body.get("usage") or {}
    return Generation(
        instance_id=item.instance_id,
        output=message.get("content") or "",
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
    )


def _redactor(secret: str | None, min_piece: int = 8) -> Callable[[str], str]:
    """Removes the key from text a server sent back, and any 8-character piece of it too
    (providers echo keys partly: "Incorrect API key provided: sk-ab...")."""
    if not secret:
        return lambda text: text

    def redact(text: str) -> str:
        text = text.replace(secret, REDACTED)
        for start in range(len(secret) - min_piece + 1):
            piece = secret[start : start + min_piece]
            if piece in text:
                text = text.replace(piece, REDACTED)
        return re.sub(f"({re.escape(REDACTED)})+", REDACTED, text)

    return redact


def _run_coroutine(coro: Coroutine[Any, Any, None]) -> None:
    """asyncio.run, also from a thread that already runs an event loop (it then runs in a helper thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    errors: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    thread = threading.Thread(target=target, name="openai-generate")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
