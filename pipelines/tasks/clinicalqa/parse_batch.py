"""Parsing a batch of replies in one child process, under a memory cap and a time limit.

Why a child: replies are written by the model under evaluation, and for a submitted package by its
author, so the parser reads hostile input on the host. Parser v3 reads a reply in time near linear
in its length, but an older version (v1, v2: frozen, never changed) or a rule no one has attacked
yet may not, and 1,045 replies of 64 KiB is 64 MiB of text. The batch is parsed in a forked child
(it inherits the parser table as the caller has it) whose address space may grow by at most the
memory cap (``RLIMIT_AS``), and the parent waits at most the time limit, then kills it. Running out
of either fails the run with one line saying so (:class:`ParsingFailed`); it never becomes a parse
status, because a parse status is a prediction, and ``medbench reproduce`` compares predictions byte
for byte: a status decided by a clock would not reproduce.

``MEDBENCH_PARSE_TIMEOUT_S`` (default 300) and ``MEDBENCH_PARSE_MEMORY_MIB`` (default 2048) set the
limits (docs/adding-a-task.md, "Answer parsing within bounds").
"""

from __future__ import annotations

import os
import resource
import select
import signal
import time
from typing import Mapping, Sequence

import msgspec

from pipelines.tasks.clinicalqa.parsing.tokens import ParseResult
from pipelines.tasks.clinicalqa.parsing.versions import parse_answer

TIMEOUT_ENV, MEMORY_ENV = "MEDBENCH_PARSE_TIMEOUT_S", "MEDBENCH_PARSE_MEMORY_MIB"
DEFAULT_TIMEOUT_S, DEFAULT_MEMORY_MIB = 300.0, 2048
_OUT_OF_MEMORY = 3


class ParsingFailed(ValueError):
    """The batch could not be parsed within its limits; the message is one line saying which."""


def _limit(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ParsingFailed(f"{name}={raw!r} is not a number; set it to a positive number or unset it") from None
    if value <= 0:
        raise ParsingFailed(f"{name}={raw!r} must be positive")
    return value


def parse_batch(outputs: Sequence[str | None], options: Sequence[str], version: str,
                option_texts: Sequence[Mapping[str, str]] | None = None, *,
                timeout_s: float | None = None, memory_mib: int | None = None) -> list[ParseResult]:
    """Every reply parsed with parser ``version`` (``option_texts``: one mapping per reply, or None), in
    one child process; :class:`ParsingFailed` when it runs out of time or memory."""
    timeout = timeout_s if timeout_s is not None else _limit(TIMEOUT_ENV, DEFAULT_TIMEOUT_S)
    memory = memory_mib if memory_mib is not None else int(_limit(MEMORY_ENV, DEFAULT_MEMORY_MIB))
    what = f"parsing {len(outputs)} outputs with parser {version}"
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: parse, write the answers, exit without running the parent's clean-ups
        os.close(read_fd)
        _child(write_fd, outputs, tuple(options), version, option_texts, memory)
    os.close(write_fd)
    try:
        body, finished = _read_until(read_fd, time.monotonic() + timeout)
    finally:
        os.close(read_fd)
    if not finished:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not finished:
        raise ParsingFailed(f"{what} took longer than {timeout:g} s (raise {TIMEOUT_ENV} if these outputs are "
                            "legitimate); no parse status was recorded")
    code = os.waitstatus_to_exitcode(status)
    if code == _OUT_OF_MEMORY or (code != 0 and not body):
        raise ParsingFailed(f"{what} ran out of its {memory} MiB (raise {MEMORY_ENV} if these outputs are "
                            "legitimate); no parse status was recorded")
    kind, value = msgspec.msgpack.decode(body)
    if kind != "ok":
        raise ParsingFailed(f"{what} failed: {value}")
    return [ParseResult(prediction, status) for prediction, status in value]


def _read_until(fd: int, deadline: float) -> tuple[bytes, bool]:
    """Everything the child writes, or (what came, False) when the deadline passes first."""
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return b"".join(chunks), False
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)


def _child(fd: int, outputs: Sequence[str | None], options: tuple[str, ...], version: str,
           option_texts: Sequence[Mapping[str, str]] | None, memory_mib: int) -> None:
    code = 0
    try:
        with open("/proc/self/statm", "rb") as fh:  # the address space inherited from the caller, in pages
            now = int(fh.read().split()[0]) * resource.getpagesize()
        cap = now + memory_mib * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        texts = option_texts if option_texts is not None else [None] * len(outputs)
        pairs = []
        for output, own in zip(outputs, texts, strict=True):
            r = parse_answer(output, options, version, own)
            pairs.append((r.prediction, r.status))
        body = msgspec.msgpack.encode(("ok", pairs))
    except MemoryError:
        code, body = _OUT_OF_MEMORY, b""
    except BaseException as exc:  # noqa: BLE001 - reported to the parent in one line
        body = msgspec.msgpack.encode(("error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os._exit(code)
