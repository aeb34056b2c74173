"""The published warehouse held in memory, one immutable ``Tables`` object per version.

A published version never changes, and its small tables (datasets, tasks, models, one record per
result) fit in memory many times over. So the service reads a version once through
``warehouse.read`` (read-only, the connection closed straight away: it never holds the database),
and answers every request from
dictionaries and precomputed orderings: leaderboards, the lookup map, the result listing. When the
``CURRENT`` pointer names a new version, ``TableStore`` builds the new ``Tables`` next to the old one
and swaps one reference. A request takes that reference once at its start, so its headers and body
come from the same version even if a swap happens while it runs. Encoded bodies are memoised on the
``Tables`` object itself, so they are dropped together with their version.

Its file name is shared on purpose: the service's own module of that name (the pipeline's serves
another side).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import msgspec

from api import schemas
from api.reporting import reference_at_floor
from api.rank_sets import RankMap, rank_map
from api.current import by_judge, current_results  # noqa: F401  (api.tables.current_results for the routes)
from api.status_index import status_index
from api.body_cache import BODY_CACHE_BYTES, BodyCache  # noqa: F401 (re-exported: api.release_views)
from medbench.kinds import board_judge
from medbench.layout import DataDir
from warehouse.read import READ_ERRORS, Catalogue, Published, read_version
from warehouse.schema import DatasetRow, ModelRow, TaskRow
from warehouse.versions import POINTER_MISSING, kept_versions, load_failure, pointer_state
from medbench.records import ModelRef, ResultRecord, metric_order_value

__all__ = ["Published", "StoreStatus", "Tables", "TableStore", "TaskEntry", "ModelEntry", "load_tables", "build_tables"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TaskEntry:
    slug: str
    version: int
    ref: str
    dataset: str
    kind: str
    title: str
    primary_metric: str
    preview: bool
    spec_hash: str
    spec: Mapping[str, Any]
    description: str
    n_results: int
    cluster_column: str | None = None  # what the task's intervals resample (``tasks.cluster_column``); None: items
    participant_flow: Mapping[str, Any] | None = None  # ``tasks.participant_flow`` (schema 5)


class ModelEntry(ModelRef, frozen=True, kw_only=True):
    """A model of the published ``models`` table (the website lists them, evaluated or not): the
    record's model (``ModelRef``'s fields) and what the table adds to it."""

    backend: str
    description: str


@dataclass(frozen=True)
class Tables:
    version: str
    demo: bool
    datasets: tuple[schemas.Dataset, ...]
    dataset_by_slug: Mapping[str, schemas.Dataset]
    tasks: tuple[TaskEntry, ...]  # by slug, then version
    task_by_ref: Mapping[str, TaskEntry]
    latest_task: Mapping[str, TaskEntry]  # slug -> highest version
    model_count: int
    models: tuple[ModelEntry, ...]  # by slug
    model_slugs: Mapping[str, tuple[str, ...]]  # a slug, or else a provider model id -> the slugs it names
    results: Mapping[str, Published]  # run_id -> result
    listing: Sequence[Published]  # the order of /v1/results (a release view sorts it on first use)
    leaderboards: Mapping[str, tuple[Published, ...]]  # task ref -> current results, best first
    current: Mapping[tuple[str, str], Published]  # (model slug, task ref) -> the result lookup answers
    total_cost_usd: float
    bodies: BodyCache = field(compare=False)
    # (task ref, model type or '' for all models, metric, run_id) -> its rank set, from the
    # ``leaderboard_ranks`` table (empty for a file from before it existed); ``api.rank_sets`` reads it
    ranks: RankMap = field(default_factory=dict)
    # run_id -> its paired difference to the task's reference model (the ``baseline_comparisons`` table)
    versus_reference: Mapping[str, schemas.BaselineComparison] = field(default_factory=dict)
    # run_id -> the older runs it superseded; (model slug, task ref) -> its withdrawn run ids (``api.status_index``)
    supersedes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    withdrawn_pairs: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    release: str | None = None  # the release these tables answer as of; None: the current one
    # task ref -> the judge model whose results make its board and lookups (None: no judge grades it)
    board_judges: Mapping[str, str | None] = field(default_factory=dict)

    def find_task(self, slug: str, version: int | None) -> TaskEntry | None:
        if version is None:
            return self.latest_task.get(slug)
        return self.task_by_ref.get(f"{slug}@{version}")

    def resolve_model(self, ident: str) -> tuple[str, ...]:
        """Slugs named by a model slug or a provider model id (several when providers share an id)."""
        return self.model_slugs.get(ident, ())


def leaderboard_key(p: Published) -> tuple:
    """The leaderboard's order: the primary metric in its direction (higher, lower, or closest to its
    target: ``medbench.records.metric_order_value``, the publisher's own key, so a stored rank set
    matches its row), then eval_date, then run_id."""
    r = p.record
    return (metric_order_value(r.primary), r.eval_date, r.run_id)


def _freeze(value: dict) -> Mapping:
    return MappingProxyType(value)


def load_tables(data: DataDir, version: str, cache_entries: int = 4096) -> Tables:
    """Read one published version (read-only, connection closed before returning) into a ``Tables``."""
    return build_tables(read_version(data, version), cache_entries)


def _dataset(d: DatasetRow) -> schemas.Dataset:
    return schemas.Dataset(
        slug=d.slug, name=d.name, license=d.license, license_url=d.license_url, citation=d.citation, doi=d.doi,
        public_since=d.public_since, source=msgspec.json.decode(d.source) if d.source else {},
        description=d.description or "", snapshot_id=d.snapshot_id,
    )


def _model(m: ModelRow) -> ModelEntry:
    return ModelEntry(
        slug=m.slug, name=m.name or m.slug, type=m.type or "", provider=m.provider or "",
        provider_model_id=m.provider_model_id or "", revision=m.revision or "", release_date=m.release_date,
        knowledge_cutoff=m.knowledge_cutoff, backend=m.backend or "", description=m.description or "",
    )


def _task(t: TaskRow, n_results: int) -> TaskEntry:
    return TaskEntry(
        slug=t.slug, version=int(t.version), ref=t.ref, dataset=t.dataset, kind=t.kind, title=t.title or "",
        primary_metric=t.primary_metric, preview=bool(t.preview), spec_hash=t.spec_hash,
        spec=msgspec.json.decode(t.spec) if t.spec else {}, description=t.description or "", n_results=n_results,
        cluster_column=t.cluster_column, participant_flow=msgspec.json.decode(t.participant_flow) if t.participant_flow else None,
    )


def build_tables(catalogue: Catalogue, cache_entries: int = 4096) -> Tables:
    """Index one version's catalogue for the routes: every ordering and map they answer from."""
    datasets = tuple(_dataset(d) for d in catalogue.datasets)
    published = list(catalogue.results)
    results = {p.run_id: p for p in published}

    by_task: dict[str, list[Published]] = {}
    for p in published:
        by_task.setdefault(p.record.task, []).append(p)

    tasks = tuple(_task(t, len(by_task.get(t.ref, ()))) for t in catalogue.tasks)
    latest: dict[str, TaskEntry] = {}
    for t in tasks:
        if t.slug not in latest or t.version > latest[t.slug].version:
            latest[t.slug] = t

    # a task graded by a judge model: its board and lookups are its own judge's results; the others
    # stay published (by run id, ``?judge=``, compare)
    judges = {t.ref: board_judge(t.kind, t.spec, catalogue.demo) for t in tasks}
    boarded = [p for p in published if by_judge(p, judges.get(p.record.task))]
    current = current_results(boarded)
    # one row per model and tier (and submitter): an official result stands beside medbench's own
    standing = current_results(boarded, lambda r: (r.model.slug, r.task, r.tier, r.provenance.submitted_by))
    leaderboards = {
        ref: tuple(sorted((p for p in standing.values() if p.record.task == ref), key=leaderboard_key))
        for ref in by_task
    }
    listing = tuple(sorted(published, key=lambda p: (p.record.task.partition("@")[0], int(p.record.task.partition("@")[2] or 0),
                                                     p.superseded_by is not None, *leaderboard_key(p))))
    return Tables(
        version=catalogue.version,
        demo=catalogue.demo,
        datasets=datasets,
        dataset_by_slug=_freeze({d.slug: d for d in datasets}),
        tasks=tasks,
        task_by_ref=_freeze({t.ref: t for t in tasks}),
        latest_task=_freeze(latest),
        model_count=len(catalogue.models),
        models=tuple(_model(m) for m in catalogue.models),
        model_slugs=_freeze(_model_index(catalogue.models, published)),
        results=_freeze(results),
        listing=listing,
        leaderboards=_freeze(leaderboards),
        current=_freeze(current),
        board_judges=_freeze(judges),
        total_cost_usd=round(math.fsum(p.record.cost_usd for p in published), 6),
        bodies=BodyCache(cache_entries),
        ranks=_freeze(rank_map(catalogue.ranks)),
        versus_reference=_freeze(_versus(catalogue)),
        **status_index(published),
    )


def _versus(catalogue: Catalogue) -> dict[str, schemas.BaselineComparison]:
    """One comparison per run (a run has one reference model: its task's)."""
    return {b.run_id: schemas.BaselineComparison(
        baseline_run_id=b.baseline_run_id, baseline_model=b.baseline_model, metric=b.metric, difference=b.difference,
        ci_low=b.ci_low, ci_high=b.ci_high, p_value=b.p_value, method=b.method, p_at_floor=reference_at_floor(b),
    ) for b in catalogue.baseline_comparisons}


def _model_index(model_rows: Sequence[ModelRow], published: list[Published]) -> dict[str, tuple[str, ...]]:
    """Map every slug to itself and every provider model id to the slugs using it; a slug always wins."""
    provider_ids: dict[str, set[str]] = {}
    slugs: set[str] = set()
    pairs = [(row.slug, row.provider_model_id) for row in model_rows] + [
        (p.record.model.slug, p.record.model.provider_model_id) for p in published
    ]
    for slug, pid in pairs:
        slugs.add(slug)
        if pid:
            provider_ids.setdefault(pid, set()).add(slug)
    index: dict[str, tuple[str, ...]] = {pid: tuple(sorted(s)) for pid, s in provider_ids.items()}
    index.update({slug: (slug,) for slug in slugs})
    return index


@dataclass(frozen=True, slots=True)
class StoreStatus:
    """What the store serves and why: ``version`` (None: nothing), the version the pointer names
    (None when missing or damaged) and ``cause``, a public sentence (no paths): why the pointer's
    version is not the one served (a fallback), or why nothing is."""

    version: str | None = None
    pointer: str | None = None
    cause: str | None = None

    @property
    def fallback(self) -> bool:
        return self.version is not None and self.cause is not None


FileKey = tuple[int, int, int] | None  # (inode, size, mtime) of a version file; None when it is gone


def _file_key(data: DataDir, version: str) -> FileKey:
    try:
        st = os.stat(data.version_file(version))
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class TableStore:
    """The current ``Tables``, re-checked against the pointer file at most every ``poll_s`` seconds.

    The check runs lazily when a request asks for the tables, so no background task is needed and a
    swap is visible to the first request after ``poll_s``; when nothing changed it costs one read
    of the pointer and one ``stat`` of the served file. The tables served always come from a file
    that is still there, unchanged: when the pointer is damaged (a directory, unreadable, not text),
    or names a version that fails to load (truncated, deleted), or the served file vanishes or
    changes, the store serves the newest kept version that loads (keeping the tables it has when
    that is the one), with one warning naming the cause, and serves nothing (``status`` says why)
    when none does. A situation that failed is retried after ``RETRY_S``, or at once when anything
    in it changes (the pointer, the files kept).
    """

    RETRY_S = 5.0

    def __init__(
        self,
        data: DataDir,
        poll_s: float = 0.25,
        cache_entries: int = 4096,
        clock: Callable[[], float] = time.monotonic,
        loader: Callable[[DataDir, str, int], Tables] = load_tables,
    ):
        self.data = data
        self.poll_s = poll_s
        self.cache_entries = cache_entries
        self._clock = clock
        self._loader = loader
        self._tables: Tables | None = None
        self._served_key: FileKey = None
        self._status = StoreStatus()
        self._situation: tuple | None = None
        self._retry_at = -math.inf
        self._next_check = -math.inf
        self._lock = threading.Lock()

    def current(self) -> Tables | None:
        if self._clock() >= self._next_check:
            self.refresh()
        return self._tables

    @property
    def status(self) -> StoreStatus:
        """What the last check found (``current`` first, to have it up to date)."""
        return self._status

    def peek_version(self) -> str | None:
        """The version being served, without checking the pointer (for error headers)."""
        tables = self._tables
        return tables.version if tables is not None else None

    def refresh(self) -> None:
        if not self._lock.acquire(blocking=False):
            return  # another thread is checking; keep serving what we have
        try:
            now = self._clock()
            self._next_check = now + self.poll_s
            pointer, cause = pointer_state(self.data)
            tables = self._tables
            if (pointer is not None and tables is not None and tables.version == pointer
                    and _file_key(self.data, pointer) == self._served_key):
                if self._status.cause is not None:
                    self._status = StoreStatus(pointer, pointer, None)
                return  # the common case: nothing changed
            kept = kept_versions(self.data)
            situation = (pointer, cause, tuple((v, _file_key(self.data, v)) for v in kept))
            if situation == self._situation and now < self._retry_at:
                return  # resolved already, and nothing changed since
            self._situation, self._retry_at = situation, now + self.RETRY_S
            self._resolve(pointer, None if pointer is not None else cause, kept)
        finally:
            self._lock.release()

    def _resolve(self, pointer: str | None, cause: str | None, kept: list[str]) -> None:
        candidates = ([pointer] if pointer else []) + [v for v in kept if v != pointer]
        for version in candidates:
            key = _file_key(self.data, version)
            tables = self._tables
            if tables is None or tables.version != version or key != self._served_key or key is None:
                started = time.perf_counter()
                try:
                    tables = self._loader(self.data, version, self.cache_entries)
                except READ_ERRORS as exc:
                    log.warning("could not load warehouse version %s: %s", version, exc)
                    if version == pointer:
                        cause = f"warehouse version {version} cannot be loaded: {load_failure(self.data, version, exc)}"
                    continue
                log.info("loaded warehouse version %s in %.3f s", version, time.perf_counter() - started)
            self._serve(tables, key, StoreStatus(version, pointer, cause))
            return
        if pointer is None and cause == POINTER_MISSING and not kept:
            cause = None  # nothing published yet: the plain 503
        elif cause is not None and len(candidates) > (1 if pointer else 0):
            cause += ", and no kept version can be loaded either"
        self._serve(None, None, StoreStatus(None, pointer, cause))

    def _serve(self, tables: Tables | None, key: FileKey, status: StoreStatus) -> None:
        if status != self._status or (tables is not None and tables is not self._tables):
            if status.fallback:
                log.warning("%s; serving the newest kept version that loads, %s", status.cause, status.version)
            elif tables is None and status.cause:
                log.error("%s: nothing can be served (503) until a publish repairs it", status.cause)
            elif tables is not None:
                log.info("serving warehouse version %s", status.version)
        self._tables, self._served_key, self._status = tables, key, status
