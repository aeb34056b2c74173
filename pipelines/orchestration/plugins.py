"""The plug-ins of this process: the code location's (and the CLI's) one place that fills registries.

Why here: the engine is handed its families, datasets and backends (``load_specs(root, plugins)``);
a composition root decides which. By default they are the installed ones (the ``medbench.*``
entry points, the built-ins included), loaded once per process; a caller that runs the
orchestrator in-process with other plug-ins (a test's toy family) chooses them with ``using``.

Its file name is shared on purpose: the Dagster side of the engine module of the same name.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from medbench.registry import Plugins, installed_plugins
from pipelines.engine.specs import Specs, load_specs

_lock = threading.Lock()
_installed: Plugins | None = None
_chosen: list[Plugins] = []


def plugins() -> Plugins:
    """The plug-ins this process runs with: those chosen by ``using``, else the installed ones."""
    global _installed
    if _chosen:
        return _chosen[-1]
    with _lock:
        if _installed is None:
            _installed = installed_plugins()
        return _installed


@contextmanager
def using(chosen: Plugins) -> Iterator[Plugins]:
    """Run the enclosed code (definitions, materializations) with ``chosen`` instead of the installed plug-ins."""
    _chosen.append(chosen)
    try:
        yield chosen
    finally:
        _chosen.remove(chosen)


def specs(root: Path | str | None = None) -> Specs:
    """``load_specs`` with this process's plug-ins."""
    return load_specs(root, plugins())
