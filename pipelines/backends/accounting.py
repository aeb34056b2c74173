"""The bookkeeping every text generator shares: what is left to do, and what the run used.

A resumed run must skip what its store already holds and still report the usage of the whole
evaluation, not only of the part done after the restart. Keeping both rules here means the
`transformers`, `vllm` and `openai` backends cannot disagree on them.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator, Sequence
from typing import TypeVar

from pipelines.engine.generations import GenerationStore
from pipelines.backends.base import PromptItem, Usage

T = TypeVar("T")


def pending_items(items: Sequence[PromptItem], store: GenerationStore) -> list[PromptItem]:
    """Items whose instance id the store does not hold yet, first occurrence only, in order."""
    done = set(store.load())
    out: list[PromptItem] = []
    for item in items:
        if item.instance_id not in done:
            done.add(item.instance_id)
            out.append(item)
    return out


def chunks(seq: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    if size < 1:
        raise ValueError(f"chunk size must be >= 1, got {size}")
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


def stored_usage(
    items: Sequence[PromptItem],
    store: GenerationStore,
    *,
    wall_seconds: float,
    device_seconds: float,
    hardware: str,
) -> Usage:
    """Usage of this call's seconds with the token totals of every stored generation of ``items``
    (so a resumed run reports the tokens of the items generated before the restart too).
    A total is None when any stored generation lacks its count: a partial sum would understate cost."""
    stored = store.load()
    wanted = {item.instance_id for item in items}
    gens = [stored[i] for i in wanted if i in stored]
    prompt = [g.prompt_tokens for g in gens]
    completion = [g.completion_tokens for g in gens]
    return Usage(
        wall_seconds=wall_seconds,
        device_seconds=device_seconds,
        hardware=hardware,
        prompt_tokens=None if None in prompt else sum(prompt),
        completion_tokens=None if None in completion else sum(completion),
    )


def cpu_hardware() -> str:
    """e.g. ``cpu (x86_64, 2 cores)``: the cores this process may run on, not the host's total."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return f"cpu ({platform.machine()}, {cores} cores)"
