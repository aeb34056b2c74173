"""``Answer``: one encoded answer as a handler returns it and ``api.answer_cache`` keeps and replays it.

Plain data, importing nothing of ``api`` but ``api.responses``, so that everything that makes,
keeps or sends an answer (``api.answers``, ``api.service``, ``api.answer_cache``) can name it
without importing one another: the dependency runs one way, service -> answer_cache -> app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from api.responses import Prepared


@dataclass(frozen=True, slots=True)
class Answer:
    """What a replay needs: the encoded body, whether a GET of it counts as a reuse (lookups), and,
    for an answer that depends on files besides the warehouse version (the transparency log's
    proofs), ``fresh()``: whether it is still the answer the app would give (else it is asked again)."""

    prepared: Prepared
    counts_reuse: bool = False
    fresh: Callable[[], bool] | None = None
