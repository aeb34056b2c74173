"""Plug-in code in a result's identity (docs/adding-a-task.md, "Plug-in code in the identity").

For each family, dataset, kind and backend a result used from a distribution other than medbench,
the result's ``versions.plugins`` records the distribution's name, its version and a sha256 of its
importable files as they are on disk: every ``*.py`` file under the top-level package the object's
class lives in, by path relative to it, in sorted order. The files on disk, not the wheel's
``RECORD``, because ``RECORD`` misses an editable install and an edit in place.

That list enters the run id only when it is non-empty (as a submitted package's sha256 does for an
official run), so changing a plug-in's code changes its results' run ids and nothing computed by
other code is reused, while every built-in result and demo run id stays as it was. A class that
no installed distribution provides (a test's in-process family) records nothing.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

PROJECT = "medbench"
PROJECT_PACKAGES = frozenset({"pipelines", "api", "warehouse"})


@lru_cache(maxsize=1)
def _distributions() -> dict[str, list[str]]:
    """Top-level package -> the distributions providing it. ``packages_distributions`` reads each
    distribution's ``top_level.txt`` or else the ``*.py`` files its ``RECORD`` lists, which an
    editable install by a ``.pth`` path (hatchling's, uv's) has neither of; so the packages that a
    distribution's ``medbench.*`` entry points name are added as its own too."""
    out = {top: list(names) for top, names in metadata.packages_distributions().items()}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        for ep in dist.entry_points:
            if ep.group.startswith("medbench.") and name:
                names = out.setdefault(ep.value.partition(":")[0].partition(".")[0], [])
                if name not in names:
                    names.append(name)
    return out


def _package_files(top: str) -> list[Path]:
    module = sys.modules.get(top)
    if module is None:
        return []
    paths = list(getattr(module, "__path__", []) or [])
    if not paths and getattr(module, "__file__", None):
        return [Path(module.__file__)]
    return sorted(p for root in paths for p in Path(root).rglob("*.py") if "__pycache__" not in p.parts)


def files_sha256(top: str) -> str:
    """sha256 over (relative path, NUL, bytes, NUL) of every importable file of package ``top``."""
    files = _package_files(top)
    module = sys.modules.get(top)
    roots = [Path(r) for r in (getattr(module, "__path__", []) or [])] if module is not None else []
    digest = hashlib.sha256()
    for path in files:
        rel = next((str(path.relative_to(r)) for r in roots if path.is_relative_to(r)), path.name)
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def plugin_versions(objects: Iterable[Any]) -> list[dict[str, str]]:
    """``[{name, version, files_sha256}]`` of the distributions other than medbench that provide the
    classes of ``objects``, each once, by name."""
    out: dict[str, dict[str, str]] = {}
    for obj in objects:
        cls = obj if isinstance(obj, type) else type(obj)
        top = cls.__module__.partition(".")[0]
        if top in PROJECT_PACKAGES:
            continue
        dists = [d for d in _distributions().get(top, []) if d != PROJECT]
        if not dists:
            continue  # not from an installed distribution (defined in a test, say)
        name = dists[0]
        if name not in out:
            out[name] = {"name": name, "version": metadata.version(name), "files_sha256": files_sha256(top)}
    return [out[k] for k in sorted(out)]


__all__ = ["files_sha256", "plugin_versions"]
