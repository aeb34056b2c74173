"""The import paths that moved, kept working for plug-ins: each old module is the new one under its
old name too, and says once that it moved.

Why: plug-ins (docs/adding-a-task.md) import ``pipelines.core.*``, ``pipelines.kinds.*``,
``warehouse.layout`` and the like, and name them in their entry points; the house was rearranged by
responsibility (docs/concepts.md, "The layers") without breaking them. An old module is not a copy:
``sys.modules`` maps the old name to the new module object, so a class has one identity whichever
path imported it. Each old name warns once per process, with ``DeprecationWarning`` (shown by
pytest, hidden by default elsewhere), naming the new path.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from types import ModuleType

_lock = threading.Lock()
_warned: set[str] = set()


def warn_once(key: str, message: str, stacklevel: int = 3) -> None:
    """Warn ``message`` with ``DeprecationWarning``, once per process and ``key`` (an old name); also
    ``medbench.old_spellings``' warning."""
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel)


def warn_moved(old: str, new: str, stacklevel: int = 3) -> None:
    """Warn, once per process and old name, that ``old`` is now ``new``."""
    warn_once(old, f"{old} moved to {new}: import {new} instead (docs/concepts.md, \"The layers\")", stacklevel + 1)


def alias_module(old: str, new: ModuleType) -> None:
    """Make the old module name the new module object (called by the old module itself)."""
    warn_moved(old, new.__name__, stacklevel=4)
    sys.modules[old] = new


def alias_package(old: str, new: ModuleType) -> Callable[[str], object]:
    """The module ``__getattr__`` of an old package: a name taken from it is the new package's."""

    def __getattr__(name: str) -> object:
        try:
            value = getattr(new, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None
        warn_moved(old, new.__name__)
        return value

    return __getattr__
