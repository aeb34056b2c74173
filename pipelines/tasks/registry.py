"""The registry of task families: one entry per family (lm-evaluation-harness style).

``family(name)`` fails with the list of known names; the built-in families are registered on
first use, so importing the registry stays cheap and a test may ``register`` a toy family of its
own that then flows through the same engine, assets, warehouse and API as the real ones.
"""

from __future__ import annotations

from pipelines.tasks.base import TaskFamily

_FAMILIES: dict[str, TaskFamily] = {}
_BUILTINS_LOADED = False


def register(family: TaskFamily) -> TaskFamily:
    """Add a family (an instance implementing ``TaskFamily``); re-registering a name replaces it."""
    _FAMILIES[family.name] = family
    return family


def unregister(name: str) -> None:
    _FAMILIES.pop(name, None)


def _load_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        # Registry wiring: the one place that names the built-in families.
        from pipelines.tasks.clinicalqa.family import ClinicalQA
        from pipelines.tasks.vitaldb_ioh.family import VitalDbIoh

        for fam in (ClinicalQA(), VitalDbIoh()):
            _FAMILIES.setdefault(fam.name, fam)


def family(name: str) -> TaskFamily:
    _load_builtins()
    try:
        return _FAMILIES[name]
    except KeyError:
        raise KeyError(f"unknown task family {name!r}; known: {', '.join(sorted(_FAMILIES))}") from None


def families() -> dict[str, TaskFamily]:
    _load_builtins()
    return dict(_FAMILIES)
