"""Specs loaded once per process for as long as none of their files changes.

Why: every evaluation run reads the specs (its run id hashes the model and task specs), twice per
run (predictions, metrics). Decoding and cross-checking every spec file costs time in proportion
to the number of models: at 1,000 model specs it was most of a run's cost, so a thousand runs paid
for a million file decodes. A process that runs many of them (``medbench materialize``, a Dagster
code server) now decodes them once and reuses the result while every spec file and every replay
outputs file (whose bytes are a replay model's revision, ``replay_pin.py``) has the same inode,
size and modification time; any change, added or removed file loads them afresh.
"""

from __future__ import annotations

import threading
from pathlib import Path

from medbench.registry import Plugins
from pipelines.engine.specs import Specs, specs_root, submitted_model_files

_lock = threading.Lock()
_cache: dict[tuple[Path, int], tuple[tuple, tuple, Specs]] = {}


def _stat(path: Path) -> tuple:
    try:
        st = path.stat()
    except OSError:
        return (str(path),)
    return (str(path), st.st_ino, st.st_size, st.st_mtime_ns)


def _spec_files(root: Path, plugins: Plugins) -> tuple:
    extra = [p for _, folder in getattr(plugins, "specs", ()) for p in sorted(folder.rglob("*.toml"))]
    return tuple(_stat(p) for p in [*sorted(root.rglob("*.toml")), *extra, *submitted_model_files()])


def _outputs_files(specs: Specs) -> tuple:
    return tuple(_stat(path) for m in specs.models.values() for path in specs.backend_of(m).watched_files(m))


def cached_specs(root: Path | str | None, plugins: Plugins) -> Specs:
    """``load_specs(root, plugins)``, reused while its files are unchanged (shared: treat it as read-only)."""
    given = specs_root(root)
    folder = given.resolve()
    key = (folder, id(plugins))
    files = _spec_files(folder, plugins)
    with _lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] == files and hit[1] == _outputs_files(hit[2]):
        return hit[2]
    specs = Specs(given, plugins)
    with _lock:
        _cache[key] = (files, _outputs_files(specs), specs)
    return specs
