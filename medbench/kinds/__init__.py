"""The warehouse kinds by name: ``kind(name)`` is the strategy (``medbench.kind.Kind``) that the
engine, the Dagster checks, ``/v1/compare``, the publisher and the site ask instead of branching on a
kind's name (docs/adding-a-task.md, "A new kind").

Kinds are plug-ins like families, datasets and backends: they live in a ``Registry``
(``medbench.registry``), the built-ins (``choice``, ``score``, ``rubric``) registered directly and every
installed distribution's entry points in the group ``medbench.kinds`` lazily (loaded on first use).
A second kind under a taken name is an error naming both, never a silent first-wins. The registry
is the process's one table of kinds because a kind is data about published files: the API, which
holds no ``Plugins``, reads the same table the engine wrote with.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any
from importlib.metadata import entry_points

from medbench.kind import Kind
from medbench.registry import GROUPS, Registry
from medbench.kinds.choice import Choice
from medbench.kinds.rubric import Rubric
from medbench.kinds.score import Score

__all__ = ["Kind", "board_judge", "kind", "kind_registry", "kinds"]

ENTRY_POINT_GROUP = GROUPS["kinds"]
BUILTIN: tuple[type, ...] = (Choice, Score, Rubric)

_lock = threading.Lock()
_registry: Registry[Kind] | None = None


def kind_registry() -> Registry[Kind]:
    """The kinds' ``Registry``: the built-ins, then the ``medbench.kinds`` entry points (filled once;
    a name declared twice raises there, naming both)."""
    global _registry
    with _lock:
        if _registry is None:
            registry: Registry[Kind] = Registry("task kind", protocol=Kind)
            for cls in BUILTIN:
                registry.add(cls())
            builtin = {f"{c.__module__}:{c.__qualname__}" for c in BUILTIN}
            # an installation made before the move declares them under their old path (a shim)
            builtin |= {f"pipelines.kinds.{c.__module__.rpartition('.')[2]}:{c.__qualname__}" for c in BUILTIN}
            seen: set[tuple[str, str]] = set()
            for ep in entry_points(group=ENTRY_POINT_GROUP):
                if ep.value in builtin and ep.name in registry or (ep.name, ep.value) in seen:
                    continue  # this project's own declaration of a built-in, or one seen twice on sys.path
                seen.add((ep.name, ep.value))
                registry.register(ep.name, ep)
            _registry = registry
        return _registry


def kinds() -> dict[str, Kind]:
    """Every known kind, by name (entry points loaded)."""
    return kind_registry().as_dict()


def kind(name: str) -> Kind:
    """The strategy of kind ``name``; an unknown name fails with the list of known ones."""
    return kind_registry().get(name)


def board_judge(kind_name: str, spec: Mapping[str, Any], demo: bool) -> str | None:
    """The judge model whose results make a task's leaderboard (a kind that grades with a judge
    declares ``board_judge``; every other kind: None, all results count)."""
    try:
        strategy = kind(kind_name)
    except KeyError:
        return None
    pick = getattr(strategy, "board_judge", None)  # optional: only kinds graded by a judge model declare it
    return pick(spec, demo) if pick is not None else None
