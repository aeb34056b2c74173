"""What each page shows, built from the served ``Tables`` (the same objects ``/v1`` answers from).

Plain functions from tables to template contexts, kept apart from the routes so they can be read
(and tested) without HTTP. A page never reads the warehouse itself: there is one data path, and a
page and its JSON twin always come from the same version.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import msgspec
import pyarrow.parquet as pq
from markupsafe import Markup

from api import render, schemas
from api.judge_checks import judge_warnings
from api.params import BLANKS
from api.reporting import interval_lines
from api.answers import board
from api.site import svg
from api.tables import ModelEntry, Published, Tables, TaskEntry
from medbench import kind as core_kind
from medbench.figures import FlowStep
from medbench.figures import flow_steps as core_flow_steps
from medbench.kinds import kind as kind_of
from medbench.records import MetricValue

MODEL_TYPES = typing.get_args(schemas.ModelType)  # ("llm", "ml", "rule")
TIERS = typing.get_args(schemas.Tier)  # ("baseline", "official")
MAX_ROWS = 100  # rows a leaderboard page shows (the JSON twin pages through the rest); keeps pages small


@dataclass(frozen=True)
class BoardRow:
    rank: int
    row: schemas.Row
    bar: Markup
    upper: MetricValue | None = None  # accuracy_upper, shown beside accuracy when some replies did not parse


@dataclass(frozen=True)
class TaskSummary:
    task: TaskEntry
    leader: Published | None
    n_current: int


def query(path: str, **params: Any) -> str:
    kept = {k: v for k, v in params.items() if v is not None and v != ""}
    return f"{path}?{urlencode(kept, safe='@/')}" if kept else path


def reference_line(task: TaskEntry) -> float | None:
    """Where chance lies on the primary metric, as the task's kind says (0.5 AUROC, 1/options accuracy)."""
    try:
        return kind_of(task.kind).chance(task.primary_metric, task.spec)
    except KeyError:  # a kind this server does not know: no line rather than a broken page
        return None


def home(tables: Tables) -> list[TaskSummary]:
    out = []
    for task in tables.tasks:
        board = tables.leaderboards.get(task.ref, ())
        out.append(TaskSummary(task=task, leader=board[0] if board else None, n_current=len(board)))
    return out


def leaderboard(tables: Tables, task: TaskEntry, model_type: str | None, base: str,
                tier: str | None = None) -> dict[str, Any]:
    """The board's rows; ``tier`` keeps one tier's rows, each with its rank on the whole board (as
    ``/v1/leaderboard?tier=`` does: the rank sets were computed over every current result)."""
    _, ranked = board(tables, task, model_type, tier=tier)  # assembled once, as /v1/leaderboard's
    shown = ranked[:MAX_ROWS]
    scale = svg.focus_scale([(p.record.primary.ci_low, p.record.primary.ci_high) for _, p, _ in shown])
    reference = reference_line(task)
    rows = []
    for rank, p, interval in shown:
        m = p.record.primary
        parsed_all = p.record.parse_rate is None or p.record.parse_rate >= 1
        rows.append(BoardRow(rank=rank, row=render.row(p, base, rank, interval),
                             bar=svg.ci_bar(m.value, m.ci_low, m.ci_high, scale, reference=reference),
                             upper=None if parsed_all else p.record.metric("accuracy_upper")))
    # the caption names the dashed line only where ci_bar draws it: chance (0.5) is often off an axis of 0.75-0.95
    drawn = reference if reference is not None and scale.contains(reference) else None
    return {"rows": rows, "total": len(ranked), "axis": svg.scale_axis(scale), "chance_line": drawn,
            "truncated": len(ranked) > len(shown), "judge_warnings": judge_warnings(task.spec, [p for _, p, _ in shown])}


def present_model_types(tables: Tables, task: TaskEntry, chosen: str | None) -> list[str]:
    """The model types the filter offers: those with a result on this task's board (and the one asked
    for), so it never offers a type that can only answer "no result"."""
    present = {p.record.model.type for p in tables.leaderboards.get(task.ref, ())}
    return [t for t in MODEL_TYPES if t in present or t == chosen]


def task_versions(tables: Tables, slug: str) -> list[TaskEntry]:
    return [t for t in tables.tasks if t.slug == slug]


def same_task_results(tables: Tables, published: Published) -> list[Published]:
    """Other results of the same task version, current ones first (the "compare with" choices)."""
    return [p for p in tables.listing if p.record.task == published.record.task and p.run_id != published.run_id]


@dataclass(frozen=True)
class DrawnFigure:
    id: str
    title: str
    caption: str
    picture: Markup


def result_figures(result: schemas.Result) -> list[DrawnFigure]:
    """Every figure the result's kind declared (``schemas.Result.figures``), drawn by the one generic
    renderer; a figure that cannot be drawn is left out, never a failed page."""
    out = []
    for fig in result.figures:
        try:
            out.append(DrawnFigure(re.sub(r"[^a-z0-9-]", "", fig.id.lower()) or "figure", fig.title, fig.caption,
                                   svg.figure(fig)))
        except (ValueError, TypeError, ZeroDivisionError, OverflowError):
            continue
    return out


def item_words(task: TaskEntry | None) -> tuple[str, str]:
    """(what one prediction is about, what the intervals resample), plural, for table headers: the
    kind's ``item_noun`` and the cluster column's name (items, when either is unknown)."""
    noun = "items"
    if task is not None:
        try:
            noun = kind_of(task.kind).item_noun
        except (KeyError, ValueError, ImportError, AttributeError):
            pass
    return noun, resampling_unit(task)


def flow_steps(task: TaskEntry) -> list[FlowStep] | None:
    """The task's participant flow as labelled counts; None when it has none or a shape the site
    does not know (then it is not drawn, and the page still answers)."""
    return core_flow_steps(task.participant_flow)


def resampling_unit(task: TaskEntry | None) -> str:
    """What the task's paired intervals resample, in words (its cluster column's, or items)."""
    return core_kind.resampling_unit(task.cluster_column if task else None)


def predictions_columns(path: Path, task: TaskEntry | None) -> str:
    """The predictions file's columns, read from its Parquet footer (the family's own columns
    included); the task's kind's description of them when the file cannot be read."""
    try:
        return ", ".join(pq.read_schema(path).names)
    except (OSError, ValueError):
        pass
    try:
        return kind_of(task.kind).columns_text if task else ""
    except KeyError:
        return ""


def model_needle(q: str | None) -> str | None:
    """``q`` as ``/v1/models`` reads it (``api.model_answers``): trimmed and casefolded, None when blank."""
    return q.strip(BLANKS).casefold() if q is not None and q.strip(BLANKS) else None


def models(tables: Tables, q: str | None = None) -> list[dict[str, Any]]:
    """Every model of the warehouse with its current results (models known only from results too).

    ``q`` filters as on ``/v1/models``: a case-insensitive substring of the name, the slug or the
    provider model id, so the page and its JSON twin list the same models.
    """
    by_slug: dict[str, list[Published]] = {}
    for (slug, _), p in sorted(tables.current.items()):
        by_slug.setdefault(slug, []).append(p)
    # a withdrawn result is shown as such ("withdrawn on <date>: <reason>"), never as "no result yet"
    withdrawn: dict[str, list[Published]] = {}
    for p in sorted(tables.results.values(), key=lambda p: (p.record.task, p.run_id)):
        if p.status == "withdrawn" and (p.record.model.slug, p.record.task) not in tables.current:
            withdrawn.setdefault(p.record.model.slug, []).append(p)
    out = []
    seen = set()
    for m in tables.models:
        seen.add(m.slug)
        out.append({**msgspec.structs.asdict(m), "results": by_slug.get(m.slug, []), "withdrawn": withdrawn.get(m.slug, [])})
    for slug in sorted(set(by_slug) | set(withdrawn)):
        if slug not in seen:
            first = (by_slug.get(slug) or withdrawn[slug])[0]
            m = ModelEntry(**msgspec.structs.asdict(first.record.model), backend="", description="")
            out.append({**msgspec.structs.asdict(m), "results": by_slug.get(slug, []), "withdrawn": withdrawn.get(slug, [])})
    needle = model_needle(q)
    if needle is None:
        return out
    return [m for m in out if any(needle in (m[k] or "").casefold() for k in ("name", "slug", "provider_model_id"))]


def agent_examples(tables: Tables, base: str) -> dict[str, Any]:
    """Live examples for agents: a real task, model and run id of this warehouse."""
    task = next((t for t in tables.tasks if tables.leaderboards.get(t.ref)), tables.tasks[0] if tables.tasks else None)
    board = tables.leaderboards.get(task.ref, ()) if task is not None else ()
    top = board[0].record if board else None
    other = next((p.run_id for p in board[1:]), None)
    model: str | None = None
    lookup_url: str | None = None
    if task is not None and top is not None:
        pid = top.model.provider_model_id
        model = pid if pid and tables.resolve_model(pid) == (top.model.slug,) else top.model.slug
        lookup_url = f"{base}/v1/lookup?model={model}&task={task.ref}"
    examples: list[tuple[str, str, str]] = [
        ("GET /v1/datasets", f"{base}/v1/datasets", "Datasets with license, license URL and citation"),
        ("GET /v1/tasks", f"{base}/v1/tasks", "Tasks: slug, version, dataset, kind, primary metric, preview flag"),
    ]
    if task is not None:
        examples += [
            ("GET /v1/tasks/{slug}", f"{base}/v1/tasks/{task.slug}", "The full task specification"),
            ("GET /v1/leaderboard", f"{base}/v1/leaderboard?task={task.ref}", "Ranked rows for one task"),
            ("GET /v1/results", f"{base}/v1/results?task={task.ref}", "Results matching all given filters"),
        ]
    if top is not None and lookup_url is not None:
        examples += [
            ("GET /v1/lookup", lookup_url, "Rule one: whether a model has been evaluated on a task"),
            ("GET /v1/results/{run_id}", f"{base}/v1/results/{top.run_id}",
             "One result: metrics with 95% CIs, versions, configuration, cost, BibTeX"),
            ("GET /artifacts/{run_id}/predictions.parquet", f"{base}/artifacts/{top.run_id}/predictions.parquet",
             "Per-item predictions (Parquet)"),
        ]
        if other is not None:
            examples.append(("GET /v1/compare", f"{base}/v1/compare?a={top.run_id}&b={other}",
                             "Paired comparison of two results of one task on their shared items"))
    examples += [
        ("GET /v1/stats", f"{base}/v1/stats", "Counts, total cost, number of reuses"),
        ("GET /v1/openapi.json", f"{base}/v1/openapi.json", "The OpenAPI 3.1 document of every route"),
    ]
    return {"task": task, "model": model, "top": top, "examples": examples, "lookup_url": lookup_url}


def comparison_context(tables: Tables, body: schemas.Compare) -> dict[str, Any]:
    a, b = tables.results[body.a], tables.results[body.b]
    both_right = both_wrong = None
    if body.a_only_correct is not None and body.b_only_correct is not None:
        both_right = round(body.value_a * body.n_shared) - body.a_only_correct
        both_wrong = body.n_shared - both_right - body.a_only_correct - body.b_only_correct
    verdict = body.better or "none"  # read in the metric's direction (``api.routes.compare.better``)
    return {"c": body, "a": a, "b": b, "both_right": both_right, "both_wrong": both_wrong, "verdict": verdict,
            "picture": svg.difference_bar(body.difference, body.ci_low, body.ci_high)}


@dataclass(frozen=True)
class Picker:
    """The compare form: one task version at a time, A and B chosen among its results only."""

    tasks: Sequence[tuple[TaskEntry, int]]  # every task version with results, and how many
    task: TaskEntry | None
    results: Sequence[Published]  # of ``task``: the leaderboard (best first), then superseded results
    a: str | None
    b: str | None


def task_results(tables: Tables, ref: str) -> list[Published]:
    board = tables.leaderboards.get(ref, ())
    ranked = {p.run_id for p in board}
    return [*board, *(p for p in tables.listing if p.record.task == ref and p.run_id not in ranked)]


def compare_picker(tables: Tables, task: TaskEntry | None, a: str | None = None, b: str | None = None) -> Picker:
    """The form for ``task`` (default: a's task, else the first with two results), A and B defaulting to
    its top two results, so the first press of "Compare" compares two different results of one task."""
    tasks = [(t, n) for t in tables.tasks if (n := len(task_results(tables, t.ref)))]
    if task is None and a in tables.results:
        task = tables.task_by_ref.get(tables.results[a].record.task)
    if task is None:
        task = next((t for t, n in tasks if n >= 2), tasks[0][0] if tasks else None)
    results = task_results(tables, task.ref) if task is not None else []
    ids = [p.run_id for p in results]
    a = a if a in ids else (ids[0] if ids else None)
    b = b if b in ids else next((i for i in ids if i != a), None)
    return Picker(tasks=tasks, task=task, results=results, a=a, b=b)


def task_intervals(tables: Tables, task: TaskEntry) -> list[tuple[str, str]]:
    """(metric, how its interval is made): the spec's bootstrap settings and the methods a published
    result of the task recorded (``api.reporting``), never words written per task."""
    results = task_results(tables, task.ref)
    methods = [(m.name, render.metric(m, p.record).method) for p in results[:1] for m in p.record.metrics]
    return interval_lines(task.spec, methods)


def comparison_method(task: TaskEntry) -> str:
    """The task's paired comparison (``/v1/compare``, the difference to the reference model) in words, from its kind."""
    try:
        return kind_of(task.kind).comparison_method
    except KeyError:
        return f"results of a {task.kind!r} task cannot be compared"


def about_intervals(tables: Tables) -> list[dict[str, Any]]:
    """Each task version with its intervals and paired comparison, for the About page."""
    return [{"task": t, "intervals": task_intervals(tables, t), "comparison": comparison_method(t)}
            for t in tables.tasks]


def log_inclusion(data_root: Any, kind: str, entry_id: str) -> dict[str, Any] | None:
    """Where a result (or release) stands in the transparency log, for its page: its leaf index and
    the checkpoint's size and root, or None while the log is missing, does not verify, or does not
    hold it yet (docs/transparency-log.md); with the checkpoint's origin and signing key. The page
    links to the proof route."""
    from warehouse.tlog.reader import LogUnavailable, open_view

    try:
        view = open_view(data_root)
    except LogUnavailable:
        return None
    index = view.state.positions.get((kind, entry_id))
    if index is None or index >= view.size or view.state.checkpoint is None:
        return None
    checkpoint = view.memo.get(("page-checkpoint",))
    if checkpoint is None:  # the checkpoint's origin and signing key, once per verified view
        body = view.checkpoint_body()
        checkpoint = view.memo[("page-checkpoint",)] = {"origin": body["origin"], "key_id": body["key_id"]}
    return {"leaf_index": index, "tree_size": view.size, "root_hash": view.state.checkpoint.root.hex(), **checkpoint}

