"""The answers to the API's questions, once: the ``/v1`` routes and the MCP tools both call these.

Each function takes the ``Tables`` of one version (taken once by the caller), the request's
parameters as text and the base URL for self-links, and returns the encoded body (``Prepared``,
memoised in that version's ``Tables.bodies``) or raises the ``ApiError`` a client should see. A
route sends the bytes with ``api.responses.respond``; an MCP tool decodes the same bytes into its
structured content, so a tool's answer is the ``/v1`` body for the same question, byte for byte
before decoding, and a fix to one is a fix to both.
"""

from __future__ import annotations

from api import render, schemas
from api.answer import Answer
from api.detectable import detectable_difference
from api.errors import ApiError, invalid_parameter, metric_not_found, run_not_found, task_not_found
from api.judge_checks import judge_warnings
from api.params import BLANKS, MAX_CACHED_PARAMETER_CHARS, parse_task_ref, require
from api.rank_sets import (
    RankEntry,
    board_method,
    metric_board,
    rank_entry,
    task_metrics,
)
from api.responses import Prepared, prepare
from api.tables import Published, Tables, TaskEntry, by_judge, current_results, leaderboard_key
from medbench.layout import RUN_ID_RE, DataDir

MODEL_TYPES = ("llm", "ml", "rule")


def small_enough_to_cache(*texts: str | None) -> bool:
    """Whether answers to these parameters may be memoised (made-up megabyte names are not)."""
    return sum(len(text or "") for text in texts) <= MAX_CACHED_PARAMETER_CHARS


def lookup(tables: Tables, model: str | None, task: str | None, base: str, judge: str | None = None) -> Answer:
    """Rule one: the current result of a model on a task version, or ``not_evaluated``; ``judge``: the
    result graded by that judge model (a rubric task; default the task's own judge)."""
    key = ("lookup", model, task, base, judge)
    answer = tables.bodies.get(key)
    if answer is None:
        answer = _lookup(tables, model, task, base, judge)
        if small_enough_to_cache(model, task, judge):
            tables.bodies.put(key, answer)
    return answer


def judged(tables: Tables, entry: TaskEntry, judge: str | None) -> dict[tuple, Published] | None:
    """(model slug, task ref) -> the current result graded by ``judge`` on ``entry``; None: ``judge``
    not given, or the task's own judge (the tables' maps answer). On a task no judge grades, no
    result is graded by ``judge``: {} (an empty board, ``not_evaluated``), as ``?tier=`` with no match
    gives ``rows: []`` rather than refusing a well-formed request."""
    if judge is None or not judge.strip(BLANKS):
        return None
    judge = judge.strip(BLANKS)
    if entry.ref not in tables.board_judges or tables.board_judges[entry.ref] is None:
        return {}
    if judge == tables.board_judges[entry.ref]:
        return None
    return current_results([p for p in tables.results.values() if p.record.task == entry.ref and by_judge(p, judge)])


def _lookup(tables: Tables, model: str | None, task: str | None, base: str, judge: str | None = None) -> Answer:
    model, task = require(model, "model"), require(task, "task")
    entry = find_task(tables, task)
    other = judged(tables, entry, judge)
    slugs = tables.resolve_model(model)
    if len(slugs) > 1:
        raise invalid_parameter(
            f"model {model!r} is the provider model id of several models; use one of their slugs: {', '.join(slugs)}"
        )
    published = (other if other is not None else tables.current).get((slugs[0], entry.ref)) if slugs else None
    withdrawn = list(tables.withdrawn_pairs.get((slugs[0], entry.ref), ())) if slugs else []
    if published is None:
        return Answer(prepare(schemas.Lookup(status="not_evaluated", result=None, withdrawn=withdrawn)))
    evaluated = prepare(schemas.Lookup(status="evaluated", result=full_result(tables, published, base),
                                       withdrawn=withdrawn))
    return Answer(evaluated, counts_reuse=True)


def full_result(tables: Tables, found: Published, base: str) -> schemas.Result:
    """A Result with everything the tables know of it: its dataset, baseline comparison and the runs it superseded."""
    task = tables.task_by_ref.get(found.record.task)
    return render.result(found, base, tables.dataset_by_slug.get(found.record.dataset),
                         tables.versus_reference.get(found.run_id), tables.supersedes.get(found.run_id, ()),
                         task.kind if task else None)


def find_task(tables: Tables, task: str, name: str = "task") -> TaskEntry:
    slug, version = parse_task_ref(task, name)
    entry = tables.find_task(slug, version)
    if entry is None:
        raise task_not_found(task.strip(BLANKS))
    return entry


def check_limit(limit: int, offset: int = 0) -> None:
    """The bounds Litestar enforces on ``/v1`` (declared there); MCP arguments get the same check."""
    if not 1 <= limit <= 1000:
        raise invalid_parameter(f"query parameter 'limit': must be between 1 and 1000, not {limit}")
    if offset < 0:
        raise invalid_parameter(f"query parameter 'offset': must be 0 or more, not {offset}")


def check_model_type(model_type: str | None, name: str = "model_type") -> None:
    if model_type is not None and model_type not in MODEL_TYPES:
        raise invalid_parameter(f"query parameter {name!r}: must be one of {', '.join(MODEL_TYPES)}")


def ranked_board(tables: Tables, entry: TaskEntry, model_type: str | None,
                 metric: str | None = None, judge: str | None = None) -> tuple[str, list[tuple[Published, RankEntry]]]:
    """The metric ranked by and the board's (result, rank set) pairs in that metric's direction.

    ``metric`` None (or blank) is the primary; a name no current result of the task publishes is
    ``metric_not_found`` (404) listing the ones it does. Results without the metric are left out."""
    other = judged(tables, entry, judge)  # another judge's board: point ranks (rank sets are the task judge's)
    full = tables.leaderboards.get(entry.ref, ()) if other is None else tuple(sorted(
        (p for p in other.values() if p.withdrawn is None), key=leaderboard_key))
    name = entry.primary_metric if metric is None or not metric.strip(BLANKS) else metric.strip(BLANKS)
    board = full if name == entry.primary_metric else metric_board(
        [p for p in full if p.record.metric(name) is not None], name)
    if name != entry.primary_metric and not board:
        known = task_metrics(full) or [entry.primary_metric]
        raise metric_not_found(name, entry.ref, known)
    if model_type is not None:
        board = tuple(p for p in board if p.record.model.type == model_type)
    return name, [(p, rank_entry(tables.ranks, entry.ref, model_type, name, p.run_id, rank))
                  for rank, p in enumerate(board, start=1)]


def board(tables: Tables, entry: TaskEntry, model_type: str | None, metric: str | None = None,
          tier: str | None = None, judge: str | None = None) -> tuple[str, list[tuple[int, Published, RankEntry]]]:
    """The leaderboard, assembled once for every surface (``/v1/leaderboard``, its MCP tool, the task
    page and its CSV download): the metric ranked by, and the (rank, result, rank set) rows kept.
    ``tier`` keeps that tier's rows only, each with its rank (and rank set) on the whole board: the
    intervals were computed jointly over every current result, so re-numbering would break them."""
    name, ranked = ranked_board(tables, entry, model_type, metric, judge)
    return name, [(rank, p, e) for rank, (p, e) in enumerate(ranked, start=1) if tier is None or p.record.tier == tier]


def leaderboard(tables: Tables, task: str, model_type: str | None, limit: int, base: str,
                metric: str | None = None, tier: str | None = None, judge: str | None = None) -> Prepared:
    """The task version's current results (one per model and tier), optionally of one model type,
    ranked by ``metric`` (default the primary) in its direction, with that ranking's rank sets.
    ``tier`` keeps that tier's rows only, each with its rank (and rank set) on the whole board: the
    intervals were computed jointly over every current result, so re-numbering would break them."""
    key = ("leaderboard", task, model_type, limit, base, metric, tier, judge)
    prepared = tables.bodies.get(key)
    if prepared is None:
        check_limit(limit)
        check_model_type(model_type)
        entry = find_task(tables, task)
        name, kept = board(tables, entry, model_type, metric, tier, judge)
        rows = [render.row(p, base, rank, e, name) for rank, p, e in kept[:limit]]
        prepared = prepare(schemas.Leaderboard(task=entry.ref, metric=name, rows=rows,
                                               rank_method=board_method([e for _, _, e in kept[:limit]]),
                                               judge_warnings=judge_warnings(entry.spec, [p for _, p, _ in kept[:limit]])))
        if small_enough_to_cache(task, metric, judge):
            tables.bodies.put(key, prepared)
    return prepared


def published(tables: Tables, run_id: str) -> Published:
    """The published result with this id; ``run_not_found`` for a malformed or unknown one."""
    if not RUN_ID_RE.match(run_id):
        raise run_not_found(run_id[:40], "not a run id (12 lowercase hex digits)")
    found = tables.results.get(run_id)
    if found is None:
        raise run_not_found(run_id)
    return found


def result(tables: Tables, run_id: str, base: str) -> Prepared:
    found = published(tables, run_id)
    key = ("result", run_id, base)
    return tables.bodies.get(key) or tables.bodies.put(key, prepare(full_result(tables, found, base)))


def predictions_link(tables: Tables, run_id: str, base: str) -> Prepared:
    found = published(tables, run_id)
    key = ("predictions-link", run_id, base)
    return tables.bodies.get(key) or tables.bodies.put(key, prepare(schemas.PredictionsLink(
        run_id=found.run_id, task=found.record.task, predictions_url=render.predictions_url(base, found.run_id),
        predictions_sha256=found.record.predictions_sha256,
    )))


def tasks(tables: Tables) -> Prepared:
    key = ("tasks",)
    return tables.bodies.get(key) or tables.bodies.put(
        key, prepare(schemas.TaskList(tasks=[render.task(t) for t in tables.tasks]))
    )


def task(tables: Tables, slug: str, version: int | None, data: DataDir | None = None) -> Prepared:
    """One task version with its spec; ``slug`` may carry ``@version`` (it must then agree with ``version``)."""
    name, ref_version = parse_task_ref(slug, name="slug")
    if version is not None and version < 0:
        raise invalid_parameter(f"query parameter 'version': must be 0 or more, not {version}")
    if ref_version is not None and version is not None and ref_version != version:
        # well-formed, so not a 400: it names a task version that cannot exist
        raise ApiError(404, "task_not_found", f"the path names version {ref_version} but ?version= says {version}")
    wanted = version if version is not None else ref_version
    entry = tables.find_task(name, wanted)
    if entry is None:
        raise task_not_found(name if wanted is None else f"{name}@{wanted}")
    key = ("task", entry.ref)
    if (cached := tables.bodies.get(key)) is not None:
        return cached
    found = detectable_difference(data, tables, entry) if data is not None else None
    return tables.bodies.put(key, prepare(render.task_detail(entry, found)))


def stats(tables: Tables, reuses: int) -> Prepared:
    """Live (reuses change), so never memoised."""
    return prepare(render.stats(tables, reuses))
