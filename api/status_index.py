"""Who superseded whom, and which results were withdrawn, indexed once per version (or release).

``Result.supersedes`` lists the older runs a result replaced; a lookup that finds no current result
names the pair's withdrawn runs (``withdrawn: [run_id]``). Both are answered from these maps, built
with the rest of ``api.tables.Tables``, so no request scans the results.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType
from typing import Any

from warehouse.read import Published


def status_index(published: Iterable[Published]) -> dict[str, Any]:
    """``supersedes`` (run_id -> older run ids, sorted) and ``withdrawn_pairs`` ((model slug, task
    ref) -> withdrawn run ids, sorted): keyword arguments of ``Tables``."""
    supersedes: dict[str, list[str]] = {}
    withdrawn: dict[tuple[str, str], list[str]] = {}
    for p in published:
        if p.superseded_by:
            supersedes.setdefault(p.superseded_by, []).append(p.run_id)
        if p.withdrawn:
            withdrawn.setdefault((p.record.model.slug, p.record.task), []).append(p.run_id)
    return {
        "supersedes": MappingProxyType({k: tuple(sorted(v)) for k, v in supersedes.items()}),
        "withdrawn_pairs": MappingProxyType({k: tuple(sorted(v)) for k, v in withdrawn.items()}),
    }
