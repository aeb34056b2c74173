"""Parsing a batch of replies in one child process, under a memory cap and a time limit.

Why a child: replies are written by the model under evaluation, and for a submitted package by its
author, so the parser reads hostile input on the host. Parser v3 reads a reply in time near linear
in its length, but an older version (v1, v2: frozen, never changed) or a rule no one has attacked
yet may not, and 1,045 replies of 64 KiB is 64 MiB of text. The batch is parsed by
``python -m pipelines.tasks.clinicalqa.parse_batch`` with ``RLIMIT_AS`` set, and the parent waits at
most the time limit. Running out of either fails the run with one line saying so
(:class:`ParsingFailed`); it never becomes a parse status, because a parse status is a prediction,
and ``medbench reproduce`` compares predictions byte for byte: a status decided by a clock would
not reproduce.

``MEDBENCH_PARSE_TIMEOUT_S`` (default 300) and ``MEDBENCH_PARSE_MEMORY_MIB`` (default 2048) set the
limits (docs/adding-a-task.md, "Answer parsing").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Sequence

import msgspec

from pipelines.tasks.clinicalqa.parsing.tokens import ParseResult
from pipelines.tasks.clinicalqa.parsing.versions import parse_answer

TIMEOUT_ENV, MEMORY_ENV = "MEDBENCH_PARSE_TIMEOUT_S", "MEDBENCH_PARSE_MEMORY_MIB"
DEFAULT_TIMEOUT_S, DEFAULT_MEMORY_MIB = 300.0, 2048
_ROOT = Path(__file__).resolve().parents[3]  # the folder holding ``pipelines``, for the child's import path


class ParsingFailed(ValueError):
    """The batch could not be parsed within its limits; the message is one line saying which."""


class _Batch(msgspec.Struct, frozen=True):
    version: str
    options: tuple[str, ...]
    outputs: list[str | None]
    texts: list[dict[str, str]] | None
    memory_mib: int


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
    batch = _Batch(version, tuple(options), list(outputs), [dict(t) for t in option_texts] if option_texts else None, memory)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH")) if p)}
    try:
        proc = subprocess.run([sys.executable, "-m", "pipelines.tasks.clinicalqa.parse_batch"],
                              input=msgspec.msgpack.encode(batch), capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise ParsingFailed(f"parsing {len(outputs)} outputs with parser {version} took longer than {timeout:g} s "
                            f"(raise {TIMEOUT_ENV} if these outputs are legitimate); no parse status was recorded") from None
    if proc.returncode != 0:
        last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        if "MemoryError" in last or proc.returncode < 0:
            raise ParsingFailed(f"parsing {len(outputs)} outputs with parser {version} ran out of its {memory} MiB "
                                f"(raise {MEMORY_ENV} if these outputs are legitimate); no parse status was recorded")
        raise ParsingFailed(f"parsing {len(outputs)} outputs with parser {version} failed: {last[:300]}")
    pairs = msgspec.msgpack.decode(proc.stdout, type=list[tuple[str | None, str]])
    return [ParseResult(prediction, status) for prediction, status in pairs]  # type: ignore[arg-type]


def _child() -> None:
    import resource

    batch = msgspec.msgpack.decode(sys.stdin.buffer.read(), type=_Batch)
    cap = batch.memory_mib * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    texts = batch.texts if batch.texts is not None else [None] * len(batch.outputs)
    out = []
    for output, option_texts in zip(batch.outputs, texts, strict=True):
        r = parse_answer(output, batch.options, batch.version, option_texts)
        out.append((r.prediction, r.status))
    sys.stdout.buffer.write(msgspec.msgpack.encode(out))


if __name__ == "__main__":
    _child()
