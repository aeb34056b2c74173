"""The warehouse kinds by name: ``kind(name)`` is the strategy (``pipelines.core.kind.Kind``) that the
engine, the Dagster checks, ``/v1/compare`` and the site ask instead of branching on a kind's name.

Adding a kind is one module next to ``choice.py`` and ``score.py`` plus one line in ``_BUILTIN``,
or, from a separately installed package, one entry point in the group ``medbench.kinds`` naming
its class (read on the first lookup of a name that is not built in).
"""

from __future__ import annotations

from importlib.metadata import entry_points

from pipelines.core.kind import Kind
from pipelines.kinds.choice import Choice
from pipelines.kinds.score import Score

__all__ = ["Kind", "kind", "kinds"]

ENTRY_POINT_GROUP = "medbench.kinds"

_BUILTIN: dict[str, Kind] = {k.name: k for k in (Choice(), Score())}
_KINDS: dict[str, Kind] = dict(_BUILTIN)
_PLUGINS_LOADED = False


def _load_plugins() -> None:
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _KINDS:
            continue  # built-ins (and the first plug-in of a name) win
        strategy = ep.load()()
        if strategy.name != ep.name:
            raise ValueError(f"entry point {ENTRY_POINT_GROUP}:{ep.name} names a kind called {strategy.name!r}")
        _KINDS[ep.name] = strategy


def kinds() -> dict[str, Kind]:
    """Every known kind, by name."""
    _load_plugins()
    return dict(_KINDS)


def kind(name: str) -> Kind:
    """The strategy of kind ``name``; an unknown name fails with the list of known ones."""
    if name not in _KINDS:
        _load_plugins()
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(f"unknown task kind {name!r}; known: {', '.join(sorted(_KINDS))}") from None
