"""Answers as of a release (``?release=<id>``), and the ``/v1/releases`` listing and detail.

A release is answered from its record in the release log (``warehouse.releases``), never from a
DuckDB file, so every release stays answerable whatever number of versions is kept. Its manifest
names every result with its status as it stood (current, superseded, withdrawn), and each task's
leaderboard rows in order with their rank sets. A result's record never changes for its run id
(``artifacts/<run_id>/result.json``, never deleted: withdrawing marks it), so the view takes the
records from the served tables (or, for a result no longer in them, from its ``result.json``) and the
statuses and orders from the manifest.

The view is a ``Tables`` like the current one (``dataclasses.replace``), so every answer function
(``api.answers``), the routes and the MCP tools answer a release exactly as they answer the current
state, memoised in the view's own body cache; the view itself is kept in the served version's body
cache, so a repeated ``?release=`` costs what a current answer costs (and the outer answer cache
replays it by its query string, ``api.answer_cache``).
"""

from __future__ import annotations

import dataclasses
import gc
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from api import render, schemas
from api.errors import release_not_found
from api.params import BLANKS
from api.rank_sets import POINT_METHOD, RankEntry
from api.responses import Prepared, prepare
from api.status_index import status_index
from api.tables import (
    BodyCache,
    Published,
    Tables,
    by_judge,
    current_results,
    leaderboard_key,
)
from medbench.files import read_regular
from medbench.layout import DataDir
from warehouse.read import READ_ERRORS
from medbench.records import ResultRecord, decode_record
from warehouse.release_deltas import is_delta
from warehouse.releases import ReleaseRecord, find_release, manifest_of, newest_releases, release_count
from warehouse.signing import read_signature
from warehouse.versions import VERSION_RE

VIEW_BODY_ENTRIES = 1024
# what a release's view is counted as in the served version's bounded cache, per result it holds
# (its Published entries, listing, boards and rank entries; the records themselves are shared)
VIEW_BYTES_PER_RESULT = 1024


def release_url(base: str, release_id: str) -> str:
    return f"{base}/releases/{release_id}"


def find(data: DataDir, release: str) -> ReleaseRecord:
    """The release named ``release``; ``release_not_found`` for a malformed or unknown id."""
    wanted = release.strip(BLANKS)
    record = find_release(data, wanted) if VERSION_RE.match(wanted) else None
    if record is None:
        raise release_not_found(wanted)
    return record


def as_of(tables: Tables, data: DataDir, release: str | None) -> Tables:
    """``tables`` itself when no release is asked for, else the view of that release."""
    if release is None or not release.strip(BLANKS):
        return tables
    key = ("release-view", release)
    view = tables.bodies.get(key)
    if view is None:
        built = _without_gc(build_view, tables, data, find(data, release))
        view = tables.bodies.put(key, built, weight=len(built.results) * VIEW_BYTES_PER_RESULT)
    return view


def _without_gc(build: Any, *args: Any) -> Any:
    """``build(*args)`` with the cyclic garbage collector paused: building a view allocates an object
    or more per result of the release and makes no cycles, and the full collections those allocations
    set off walk the server's whole heap (the served tables), which made a cold ``?release=`` grow
    faster than the release (docs/benchmarks.md, "Publishing at scale")."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return build(*args)
    finally:
        if paused:
            gc.enable()


def _record(tables: Tables, data: DataDir, run_id: str) -> tuple[ResultRecord, Mapping[str, str] | None] | None:
    """A result's record and signature: from the tables, else from its folder (a result no longer in
    the current version's file)."""
    found = tables.results.get(run_id)
    if found is not None:
        return found.record, found.signature
    try:
        return decode_record(read_regular(data.result_path(run_id))), read_signature(data, run_id)
    except READ_ERRORS:
        return None  # its folder was moved away by hand: the release is answered without it


class SortedOnFirstUse(Sequence):
    """A release's result listing, sorted when a route first reads it: a ``?release=`` lookup or
    leaderboard never does, and sorting every result of a 100,000-result release (n log n) was the part
    of a cold ``?release=`` that grew faster than the release (docs/benchmarks.md, "Publishing at
    scale"). Read under the GIL, so two first readers at worst sort twice, to the same order."""

    def __init__(self, items: list[Published], key: Callable[[Published], Any]):
        self._items, self._key, self._sorted = items, key, None

    def _order(self) -> tuple[Published, ...]:
        if self._sorted is None:
            self._sorted = tuple(sorted(self._items, key=self._key))
        return self._sorted

    def __getitem__(self, index):  # type: ignore[override]
        return self._order()[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Published]:
        return iter(self._order())


def _listing_key(p: Published) -> tuple:
    return (p.record.task.partition("@")[0], int(p.record.task.partition("@")[2] or 0), p.status != "current",
            *leaderboard_key(p))


def build_view(tables: Tables, data: DataDir, release: ReleaseRecord) -> Tables:
    """The tables as of ``release``: its results with their statuses then, its leaderboards in its order."""
    manifest = manifest_of(data, release)
    published: dict[str, Published] = {}
    for entry in manifest["results"]:
        kept = _record(tables, data, entry["run_id"])
        if kept is not None:
            record, signature = kept
            withdrawn = entry.get("withdrawn")
            published[record.run_id] = Published(record, entry.get("superseded_by"),
                                                 MappingProxyType(dict(withdrawn)) if withdrawn else None, signature)
    boards, ranks = {}, {}
    for task, rows in manifest["leaderboards"].items():
        boards[task] = tuple(published[r["run_id"]] for r in rows if r["run_id"] in published)
        for r in rows:
            ranks[(task, "", r["metric"]["name"], r["run_id"])] = RankEntry(
                r["rank"], r["rank_low"], r["rank_high"], r["tied_with_leader"], r["marginal_rank_low"],
                r["marginal_rank_high"], r.get("rank_method") or POINT_METHOD)
    values = list(published.values())
    listing = SortedOnFirstUse(values, _listing_key)
    return dataclasses.replace(
        tables, results=MappingProxyType(published), listing=listing, leaderboards=MappingProxyType(boards),
        current=MappingProxyType(current_results([p for p in values if by_judge(p, tables.board_judges.get(p.record.task))])),
        ranks=MappingProxyType(ranks),
        total_cost_usd=round(math.fsum(p.record.cost_usd for p in values), 6), bodies=BodyCache(VIEW_BODY_ENTRIES),
        release=release.id, **status_index(values),
    )


def recent(data: DataDir, limit: int = 100) -> list[tuple[str, str]]:
    """The newest releases, newest first, as (id, label) for the site's release picker: a bare id
    says nothing to a person, its date and size do (``2026-11-01 14:03 UTC, 15 results``)."""
    return [(r.id, f"{r.published_at[:10]} {r.published_at[11:16]} UTC, {r.n_results} results ({r.id})")
            for r in newest_releases(data, limit)]


def page_context(tables: Tables, data: DataDir, release: str, base: str) -> dict[str, Any]:
    """What the release page (``/releases/{id}``, the citation URL) shows: the release, its
    leaderboards as published, its other results with their status, its BibTeX and signature."""
    r = find(data, release)
    url = release_url(base, r.id)
    view = as_of(tables, data, r.id)
    titles = {t.ref: t.title or t.ref for t in tables.tasks}
    manifest = manifest_of(data, r)  # a delta record holds only the boards that changed
    boards = []
    for task, rows in manifest["leaderboards"].items():
        named = [{**row, "name": view.results[row["run_id"]].record.model.name
                  if row["run_id"] in view.results else row["model"]} for row in rows]
        boards.append({"task": task, "slug": task.partition("@")[0], "version": task.partition("@")[2],
                       "title": titles.get(task, task), "rows": named})
    others = [e for e in manifest["results"] if e["status"] != "current"]
    return {"release": r, "url": url, "bibtex": bibtex(r, url), "boards": boards, "others": others,
            "signature": render.signature(r.signature)}


def bibtex(release: ReleaseRecord, url: str) -> str:
    """A ``@misc`` entry citing the release: its id, date, size and the manifest's checksum."""
    year = release.published_at[:4]
    note = (f"medbench release {release.id}, published {release.published_at[:10]}: {release.n_results} results "
            f"on {', '.join(release.tasks) or 'no task'}; manifest sha256 {release.manifest_sha256}")
    return (f"@misc{{medbench-release-{release.id},\n  title = {{medbench leaderboards, release {release.id}}},\n"
            f"  author = {{medbench}},\n  year = {{{year}}},\n  howpublished = {{\\url{{{url}}}}},\n"
            f"  note = {{{note}.}}\n}}\n")


def _summary(r: ReleaseRecord, base: str) -> schemas.ReleaseSummary:
    return schemas.ReleaseSummary(id=r.id, published_at=r.published_at, n_results=r.n_results, tasks=list(r.tasks),
                                  manifest_sha256=r.manifest_sha256, previous=r.previous,
                                  url=release_url(base, r.id), signature=render.signature(r.signature))


def listing(tables: Tables, data: DataDir, limit: int, offset: int, base: str) -> Prepared:
    """``GET /v1/releases``: newest first, paginated."""
    total = release_count(data)  # the log's index: only the page's own lines are read
    key = ("releases", total, limit, offset, base)
    prepared = tables.bodies.get(key)
    if prepared is None:
        prepared = tables.bodies.put(key, prepare(schemas.ReleasePage(
            releases=[_summary(r, base) for r in newest_releases(data, limit, offset)] if offset < total else [],
            total=total, limit=limit, offset=offset)))
    return prepared


def detail(tables: Tables, data: DataDir, release: str, base: str) -> Prepared:
    """``GET /v1/releases/{id}``: the release with its manifest and BibTeX."""
    key = ("release", release, base)
    prepared = tables.bodies.get(key)
    if prepared is None:
        r = find(data, release)
        url = release_url(base, r.id)
        prepared = tables.bodies.put(key, prepare(schemas.Release(
            id=r.id, published_at=r.published_at, n_results=r.n_results, tasks=list(r.tasks),
            manifest_sha256=r.manifest_sha256, previous=r.previous, url=url, manifest=manifest_of(data, r),
            bibtex=bibtex(r, url), signature=render.signature(r.signature),
            delta=r.manifest if is_delta(r.manifest) else None)))
    return prepared
