"""The answer functions of the read questions (``api.questions``).

Each function takes ``Asked`` (the service, the tables of the version asked about, the base URL for
self-links) and the question's parameter Struct, and returns the encoded body or an ``Answer``; the
work itself is in ``api.answers``, ``api.model_answers``, ``api.release_views``, ``api.routes.compare``
and ``api.routes.log``. They are named in the table and imported when first asked
(``api.asking.ask``, which every surface calls), so nothing imports this module by name.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from api import answers, model_answers, release_views, render, schemas
from api.answer import Answer
from api.asking import Asked
from api.errors import ApiError
from api.params import BLANKS, MAX_CACHED_PARAMETER_CHARS, parse_task_ref
from api.responses import Prepared, prepare
from api.routes import log as log_routes
from api.routes.compare import comparison
from api.tables import Published, Tables
from warehouse.keys import keys_path, read_keys

# -- the questions ------------------------------------------------------------------------------


def datasets(asked: Asked, args: Any) -> Prepared:
    tables, key = asked.tables, ("datasets",)
    return tables.bodies.get(key) or tables.bodies.put(key, prepare(schemas.DatasetList(datasets=list(tables.datasets))))


def tasks(asked: Asked, args: Any) -> Prepared:
    return answers.tasks(asked.tables)


def task(asked: Asked, args: Any) -> Prepared:
    return answers.task(asked.tables, args.slug, args.version, asked.service.settings.data)


def leaderboard(asked: Asked, args: Any) -> Prepared:
    return answers.leaderboard(asked.tables, args.task, args.model_type, args.limit, asked.base, args.metric,
                               args.tier, args.judge)


def _matching(tables: Tables, dataset: str | None, task: str | None, model: str | None, model_type: str | None,
              tier: str | None = None) -> list[Published]:
    refs: set[str] | None = None
    if task is not None:
        slug, version = parse_task_ref(task)
        entry = tables.find_task(slug, version)
        refs = {entry.ref} if entry else set()
    slugs = set(tables.resolve_model(model.strip(BLANKS))) if model is not None else None
    return [
        p for p in tables.listing
        if (dataset is None or p.record.dataset == dataset)
        and (refs is None or p.record.task in refs)
        and (slugs is None or p.record.model.slug in slugs)
        and (model_type is None or p.record.model.type == model_type)
        and (tier is None or p.record.tier == tier)
    ]


def results(asked: Asked, a: Any) -> Prepared:
    """Every published result, superseded ones included (each summary says ``superseded_by``), ordered by
    task, then current before superseded, then leaderboard order; filters combine with AND, and one
    naming nothing known matches nothing. ``model`` matches a slug, or every model with that provider id."""
    tables, base = asked.tables, asked.base
    key = ("results", a.dataset, a.task, a.model, a.model_type, a.tier, a.limit, a.offset, base)
    prepared = tables.bodies.get(key)
    if prepared is None:
        matches = _matching(tables, a.dataset, a.task, a.model, a.model_type, a.tier)
        page = [render.summary(p, base) for p in matches[a.offset : a.offset + a.limit]]
        prepared = prepare(schemas.ResultPage(results=page, total=len(matches), limit=a.limit, offset=a.offset))
        if sum(len(text or "") for text in (a.dataset, a.task, a.model)) <= MAX_CACHED_PARAMETER_CHARS:
            tables.bodies.put(key, prepared)  # no memory for made-up megabyte names
    return prepared


def result(asked: Asked, args: Any) -> Prepared:
    return answers.result(asked.tables, args.run_id, asked.base)


def predictions_link(asked: Asked, args: Any) -> Prepared:
    return answers.predictions_link(asked.tables, args.run_id, asked.base)


def remote_predictions_link(client: Any, args: Any) -> Any:
    """``predictions_url`` through another server: its result's fields (no route of its own)."""
    from urllib.parse import quote

    body = client.get(f"/v1/results/{quote(args.run_id, safe='')}", release=args.release)
    return msgspec.to_builtins(schemas.PredictionsLink(
        run_id=body["run_id"], task=body["task"], predictions_url=body["predictions_url"],
        predictions_sha256=body["predictions_sha256"]))


def lookup(asked: Asked, args: Any) -> Answer:
    return answers.lookup(asked.tables, args.model, args.task, asked.base, args.judge)


async def compare(asked: Asked, args: Any) -> Prepared:
    tables = asked.tables
    body = await comparison(asked.service, tables, args.a, args.b)
    key = ("compare-body", body.a, body.b)
    return tables.bodies.get(key) or tables.bodies.put(key, prepare(body))


def models(asked: Asked, a: Any) -> Prepared:
    return model_answers.models(asked.tables, a.q, a.type, a.provider, a.limit, a.offset)


def model(asked: Asked, args: Any) -> Prepared:
    return model_answers.model(asked.tables, args.provider, args.name)


def stats(asked: Asked, args: Any) -> Prepared:
    return answers.stats(asked.tables, asked.service.reuses.count)


def releases(asked: Asked, args: Any) -> Prepared:
    log_routes.require_verified_log(asked.service)
    return release_views.listing(asked.tables, asked.service.settings.data, args.limit, args.offset, asked.base)


def release(asked: Asked, args: Any) -> Prepared:
    log_routes.require_verified_log(asked.service)
    return release_views.detail(asked.tables, asked.service.settings.data, args.id, asked.base)


def keys(asked: Asked, args: Any) -> Prepared:
    """Every public key that ever signed a result or a release of this data directory, from its keys file
    (``warehouse.keys``), which the publisher appends to; the service never holds a private key. Old keys
    stay listed with their ``valid_until``. The answer is kept per state of the file (size, modification
    time, inode), so a key added by a publish that changed no content shows at once."""
    data = asked.service.settings.data
    try:
        st = os.stat(keys_path(data))
        state = (st.st_size, st.st_mtime_ns, st.st_ino)
    except OSError:
        state = None
    key = ("keys", state)
    prepared = asked.tables.bodies.get(key)
    if prepared is None:
        listed = [schemas.PublicKey(**msgspec.structs.asdict(k)) for k in read_keys(data)]  # type: ignore[arg-type]
        prepared = asked.tables.bodies.put(key, prepare(schemas.KeyList(keys=listed)))
    return prepared


def submission(asked: Asked, args: Any) -> Prepared:
    """A submission from the submissions store (a write path beside the warehouse, so no tables)."""
    from medbench.submissions import SubmissionNotFound

    try:
        return prepare(asked.service.submissions.get(args.id))
    except SubmissionNotFound:
        raise ApiError(404, "submission_not_found", f"no submission {args.id!r}") from None


def log_checkpoint(asked: Asked, args: Any) -> Prepared:
    return log_routes.tool_answer(asked.service, "log_checkpoint", args)


def log_entries(asked: Asked, args: Any) -> Prepared:
    return log_routes.tool_answer(asked.service, "log_entries", args)


def log_consistency(asked: Asked, args: Any) -> Prepared:
    return log_routes.tool_answer(asked.service, "log_consistency", args)


def result_proof(asked: Asked, args: Any) -> Prepared:
    return log_routes.tool_answer(asked.service, "result_proof", args)


def release_proof(asked: Asked, args: Any) -> Prepared:
    return log_routes.tool_answer(asked.service, "release_proof", args)
