"""The plug-ins tests run with: the installed ones (entry points), as the composition roots load them.

Why one helper: the engine is handed its families, datasets and backends; a test takes them from
here (``builtin_plugins()``, shared, never modified) or builds its own bundle on top of them
(``with_plugins(families=[...], datasets=[...])``, a fresh Registry per call), never by importing
a module that fills a registry as a side effect.

Its file name is shared on purpose: test support named after the production module it stands in for
or builds.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from medbench.registry import Plugins, installed_plugins
from pipelines.engine.specs import Specs, load_specs


@lru_cache(maxsize=1)
def builtin_plugins() -> Plugins:
    """The installed plug-ins (the project's built-ins, and any installed distribution's); read-only."""
    return installed_plugins()


def with_plugins(families=(), datasets=(), backends=()) -> Plugins:
    """A new bundle: the installed plug-ins plus the given objects (a name taken twice is an error)."""
    plugins = installed_plugins()
    for registry, objs in ((plugins.families, families), (plugins.datasets, datasets), (plugins.backends, backends)):
        for obj in objs:
            registry.add(obj)
    return plugins


def specs(root: Path | str | None = None, plugins: Plugins | None = None) -> Specs:
    """``load_specs(root, plugins)`` with the built-in plug-ins by default."""
    return load_specs(root, plugins or builtin_plugins())
