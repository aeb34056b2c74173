"""``/v1/models`` and ``/v1/models/{provider}/{name}`` answers (shared with the MCP ``find_models`` tool).

Agents ask "has anyone evaluated X?" with whatever name they have: a display name, a slug or the
provider's model id. So ``q`` is a case-insensitive substring of any of the three, and every model
lists its current results (``evaluations``: task version and run id, the lookup's answer for that
pair) so the next call can fetch or cite one directly. Models known only from results (not in the
``models`` table) are listed too, as the website's models page does. The index is built once per
version and memoised in its ``Tables.bodies``.
"""

from __future__ import annotations

from api import schemas
from api.answers import small_enough_to_cache, check_limit, check_model_type
from api.errors import model_not_found
from api.params import BLANKS
from api.responses import Prepared, prepare
from api.tables import Tables

_INDEX_KEY = ("models-index",)


def _index(tables: Tables) -> tuple[schemas.ModelInfo, ...]:
    """Every model of the version, by slug, with its current results ordered by task."""
    cached = tables.bodies.get(_INDEX_KEY)
    if cached is not None:
        return cached
    evaluations: dict[str, list[schemas.Evaluation]] = {}
    for (slug, ref), p in sorted(tables.current.items()):
        evaluations.setdefault(slug, []).append(schemas.Evaluation(task=ref, run_id=p.run_id))
    models: dict[str, schemas.ModelInfo] = {}
    for m in tables.models:
        models[m.slug] = schemas.ModelInfo(
            slug=m.slug, name=m.name, type=m.type, provider=m.provider,  # type: ignore[arg-type]
            provider_model_id=m.provider_model_id, revision=m.revision, release_date=m.release_date,
            knowledge_cutoff=m.knowledge_cutoff, evaluations=evaluations.get(m.slug, []),
        )
    for p in tables.current.values():
        ref = p.record.model
        if ref.slug not in models:
            models[ref.slug] = schemas.ModelInfo(
                slug=ref.slug, name=ref.name, type=ref.type, provider=ref.provider,  # type: ignore[arg-type]
                provider_model_id=ref.provider_model_id, revision=ref.revision, release_date=ref.release_date,
                knowledge_cutoff=ref.knowledge_cutoff, evaluations=evaluations.get(ref.slug, []),
            )
    index = tuple(models[slug] for slug in sorted(models))
    return tables.bodies.put(_INDEX_KEY, index)


def _matches(m: schemas.ModelInfo, needle: str | None, model_type: str | None, provider: str | None) -> bool:
    if model_type is not None and m.type != model_type:
        return False
    if provider is not None and m.provider != provider:
        return False
    return needle is None or any(needle in text.casefold() for text in (m.name, m.slug, m.provider_model_id))


def models(tables: Tables, q: str | None, model_type: str | None, provider: str | None,
           limit: int = 100, offset: int = 0) -> Prepared:
    """One page of the models matching every given filter (no match: an empty page, not an error)."""
    key = ("models", q, model_type, provider, limit, offset)
    prepared = tables.bodies.get(key)
    if prepared is None:
        check_limit(limit, offset)
        check_model_type(model_type, "type")
        needle = q.strip(BLANKS).casefold() if q is not None and q.strip(BLANKS) else None
        found = [m for m in _index(tables) if _matches(m, needle, model_type, provider)]
        prepared = prepare(schemas.ModelPage(models=found[offset:offset + limit], total=len(found),
                                             limit=limit, offset=offset))
        if small_enough_to_cache(q, provider):
            tables.bodies.put(key, prepared)
    return prepared


def model(tables: Tables, provider: str, name: str) -> Prepared:
    """One model by its slug ``provider/name``; ``model_not_found`` otherwise."""
    slug = f"{provider}/{name}"
    key = ("model", slug)
    prepared = tables.bodies.get(key)
    if prepared is None:
        found = next((m for m in _index(tables) if m.slug == slug), None)
        if found is None:
            raise model_not_found(slug[:200])
        prepared = tables.bodies.put(key, prepare(found))
    return prepared
