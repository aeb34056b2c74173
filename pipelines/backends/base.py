"""What every model backend gives the pipeline, whatever runs underneath.

Choice tasks talk to *text generators* (prompts in, raw text out, checkpointed in a
GenerationStore); score tasks talk to *window scorers* (windows in, one float per window out).
Keeping that split means the parser and the metrics never know which backend produced the data.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from pipelines.engine.generations import GenerationStore


@dataclass
class Usage:
    """Usage of one run; cost is derived from it with the dated price table."""

    wall_seconds: float = 0.0
    device_seconds: float = 0.0
    hardware: str = field(default_factory=lambda: f"cpu ({platform.machine()})")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True)
class PromptItem:
    instance_id: str
    prompt: str  # the user message; chat models apply their own chat template to it


class TextGenerator(Protocol):
    """Generates raw text for each prompt not yet in ``store`` and appends it there."""

    def generate(self, items: Sequence[PromptItem], store: GenerationStore, log: Callable[[str], None]) -> Usage: ...
