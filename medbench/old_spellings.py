"""The old spellings, kept working for plug-ins written before medbench spelled it one way,
"materialize" (docs/concepts.md, "Glossary"): the ``Dataset`` method ``materialise()`` and the class
name ``Materialised``. Every old spelling lives in this module and nowhere else in the project
(tests/unit/test_vocabulary.py allows it here by path), so dropping them one day is one file.

Why here: the engine calls a plug-in's required method through ``call`` below (never the method by
name), the load-time check (``medbench.conformance``) asks ``old_method`` which older name a required
method may carry, and ``medbench.outcomes`` serves an old class name through ``renamed``. Each old
spelling still works and warns once per process with ``DeprecationWarning`` (as
``medbench.old_paths`` does for a moved module), saying what to rename it to. This module imports
nothing of the project but that warning: the protocol comes as an argument, so the modules that
declare the protocols and outcomes can ask it without an import circle.
"""

from __future__ import annotations

import sys
from typing import Any

from medbench.old_paths import warn_once

# (protocol, as module.qualname; required method) -> the method's older spelling, which a plug-in may define instead
OLD_METHODS: dict[tuple[str, str], str] = {("medbench.protocols.Dataset", "materialize"): "materialise"}

# module -> {old attribute name: the attribute's name now}
OLD_NAMES: dict[str, dict[str, str]] = {"medbench.outcomes": {"Materialised": "Materialized"}}


def _qualified(protocol: type) -> str:
    return f"{protocol.__module__}.{protocol.__qualname__}"


def old_method(protocol: type, name: str) -> str | None:
    """The older spelling of ``protocol``'s required method ``name`` a plug-in may still define, if any."""
    return OLD_METHODS.get((_qualified(protocol), name))


def defines(cls: type, protocol: type, name: str) -> bool:
    """Whether ``cls`` has its own ``name``, not none and not the protocol's stub it inherited."""
    own = getattr(cls, name, None)
    return own is not None and own is not getattr(protocol, name, None)


def call(plugin: Any, protocol: type, name: str, *args: Any) -> Any:
    """Call ``plugin``'s ``protocol`` method ``name`` (``Dataset.materialize``: the dataset's
    snapshot); for a plug-in that defines only the method's old spelling, that one, warning once
    per class to rename it."""
    cls = type(plugin)
    old = old_method(protocol, name)
    if old is None or defines(cls, protocol, name) or not defines(cls, protocol, old):
        return getattr(plugin, name)(*args)
    where = f"{cls.__module__}.{cls.__qualname__}"
    warn_once(f"{where}.{old}", f"{where}.{old}() is the old spelling of {protocol.__name__}.{name}(): rename it "
                                f"{name}() (docs/adding-a-task.md, \"Checked at load\")")
    return getattr(plugin, old)(*args)


def renamed(module: str, name: str, home: str | None = None) -> Any:
    """A module ``__getattr__``'s answer: the attribute an old ``name`` asked of ``module`` is now, in
    ``home`` (the module that defines it; default ``module``), warning once to import the new name;
    else the usual AttributeError."""
    home = home or module
    new = OLD_NAMES.get(home, {}).get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warn_once(f"{home}.{name}", f"{name} is the old spelling of {new}: import {new} instead "
                                f"(docs/concepts.md, \"Glossary\")", stacklevel=4)
    return getattr(sys.modules[home], new)


__all__ = ["OLD_METHODS", "OLD_NAMES", "call", "defines", "old_method", "renamed"]
