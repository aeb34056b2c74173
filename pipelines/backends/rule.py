"""``medbench/random``: one option per item, uniformly at random, the floor every model must beat.

Each item's letter comes from its own seeded draw (sha256 of ``"<seed>:<instance_id>"``), not
from one random stream, so a rerun that resumes half-way, a different item order or a subset of
items gives every item the same letter. The output is text (``정답: X``) that goes through the
same parser and GenerationStore as a language model's reply.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Callable, Sequence

from pipelines.backends.accounting import chunks, pending_items
from pipelines.backends.base import PromptItem, Usage
from pipelines.backends.settings import UniformChoiceRule, settings_for
from pipelines.engine.generations import Generation, GenerationStore
from pipelines.engine.progress import Progress

DEFAULT_OPTIONS: tuple[str, ...] = ("A", "B", "C", "D", "E")  # the letters a uniform_choice rule draws from

CHUNK = 500


def uniform_choice(seed: int, instance_id: str, options: Sequence[str] = DEFAULT_OPTIONS) -> str:
    """The option drawn for one item: uniform over ``options`` (bias below 1e-18 for five)."""
    digest = hashlib.sha256(f"{seed}:{instance_id}".encode()).digest()
    return options[int.from_bytes(digest[:8], "big") % len(options)]


class UniformChoiceGenerator:
    """TextGenerator for the ``rule`` backend with settings ``rule = "uniform_choice"``, ``seed = ...``."""

    def __init__(self, seed: int, options: Sequence[str] = DEFAULT_OPTIONS):
        self.seed = seed
        self.options = tuple(options)

    @classmethod
    def from_settings(cls, settings: Any, options: Sequence[str] = DEFAULT_OPTIONS) -> UniformChoiceGenerator:
        """From typed rule settings (a mapping, e.g. ``{"rule": "uniform_choice", "seed": 7}``, is decoded strictly)."""
        typed = settings_for("rule", settings)
        if not isinstance(typed, UniformChoiceRule):
            raise ValueError(f"model settings name rule {type(typed).__struct_config__.tag!r}, not 'uniform_choice'")
        return cls(typed.seed, options)

    def generate(self, items: Sequence[PromptItem], store: GenerationStore, log: Callable[[str], None]) -> Usage:
        start = time.monotonic()
        todo = pending_items(items, store)
        progress = Progress("uniform random choice", len(todo), log)
        for chunk in chunks(todo, CHUNK):
            store.append(
                Generation(
                    instance_id=item.instance_id,
                    output=f"정답: {uniform_choice(self.seed, item.instance_id, self.options)}",
                )
                for item in chunk
            )
            progress.advance(len(chunk))
        return Usage(wall_seconds=time.monotonic() - start)
