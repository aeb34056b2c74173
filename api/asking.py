"""``ask``: the one way a read question (``api.questions``) is asked, by its ``/v1`` route and its MCP tool alike.

The route (``api.question_routes``) and the MCP tool (``api.agent_sources.LocalAnswers``) both call
``ask``, so a route's body and a tool's structured content are the same bytes before decoding, and
a question's tables are taken the same way on both: once per question, as of ``release`` when the
question has that parameter. The answer function runs in a worker thread when the question says it
reads files (``threaded``), and is awaited when it is a coroutine.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio.to_thread

from api import release_views
from api.answer import Answer
from api.questions import ReadQuestion
from api.service import Service
from api.tables import Tables


@dataclass(frozen=True)
class Asked:
    """What an answer function may use besides its parameters."""

    service: Service
    tables: Tables  # of the version asked about (as of ``release``); None for a question not about the warehouse
    base: str  # the origin of self-links


async def ask(question: ReadQuestion, service: Service, scope: Any, args: Any, base: str) -> tuple[Answer, Tables | None]:
    """``question``'s answer to ``args`` and the tables it came from (None when it needs none)."""
    tables = None
    if question.warehouse:
        tables = service.tables(scope)
        if question.has_release:
            tables = release_views.as_of(tables, service.settings.data, args.release)
    asked = Asked(service, tables, base)  # type: ignore[arg-type]
    fn = question.answer_fn()
    if question.threaded:
        out = await anyio.to_thread.run_sync(partial(fn, asked, args))
    else:
        out = fn(asked, args)
        if inspect.isawaitable(out):
            out = await out
    return (out if isinstance(out, Answer) else Answer(out)), tables
