"""The import paths that moved (docs/concepts.md, "The layers") still import, for plug-ins written
against them: each old module IS the new one (one class identity whichever path imported it), and
each warns once per process with DeprecationWarning naming the new path. The plug-ins under
tests/plugins/ import the old paths on purpose: their tests are the end-to-end proof."""

from __future__ import annotations

import json
import subprocess
import sys

from support.paths import REPO

# the old modules are the shims that say so (medbench/old_paths.py)
SHIMS = sorted(
    ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
    for top in ("pipelines", "warehouse") for p in (REPO / top).rglob("*.py")
    if "alias_module(__name__" in (text := p.read_text()) or "alias_package(__name__" in text
)

PROBE = r"""
import importlib, json, sys, warnings
warnings.simplefilter("always")
out = {}
for old in sys.argv[1:]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = importlib.import_module(old)
        again = importlib.import_module(old)
        name = first.__name__
    out[old] = {"module": name, "same": first is again,
                "warnings": [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]}
print(json.dumps(out))
"""


def _probe(modules: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, *modules], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_there_are_shims_for_the_paths_plugins_use() -> None:
    for old in ("pipelines.core.specs", "pipelines.core.protocols", "pipelines.kinds", "pipelines.kinds.score",
                "pipelines.stats.ranks", "warehouse.layout", "warehouse.files", "warehouse.submissions"):
        assert old in SHIMS


def test_each_old_module_is_the_new_one_and_warns_once() -> None:
    modules = [m for m in SHIMS if (REPO / m.replace(".", "/")).with_suffix(".py").exists()]
    found = _probe(modules)
    for old in modules:
        got = found[old]
        assert got["module"].startswith(("medbench.", "pipelines.orchestration.")), (old, got)
        assert got["same"], old
        assert got["warnings"] == [f"{old} moved to {got['module']}: import {got['module']} instead "
                                   f'(docs/concepts.md, "The layers")'], (old, got["warnings"])


def test_a_name_taken_from_an_old_package_is_the_new_one_and_warns_once() -> None:
    code = r"""
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from pipelines.kinds import kind as old_kind
    from pipelines.kinds import kinds as old_kinds
    from warehouse.submissions import SubmissionStore as OldStore
    from pipelines.core.specs import TaskSpec as OldTaskSpec
from medbench.kinds import kind, kinds
from medbench.submissions import SubmissionStore
from medbench.specs import TaskSpec
print(json.dumps({"same": [old_kind is kind, old_kinds is kinds, OldStore is SubmissionStore, OldTaskSpec is TaskSpec],
                  "warnings": [str(w.message).split(":")[0] for w in caught if issubclass(w.category, DeprecationWarning)]}))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                          check=False, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["same"] == [True, True, True, True]
    assert got["warnings"] == ["pipelines.kinds moved to medbench.kinds", "warehouse.submissions moved to medbench.submissions",
                               "pipelines.core.specs moved to medbench.specs"]


def test_the_builtin_kinds_declared_under_their_old_path_are_still_the_builtins(monkeypatch) -> None:
    """An installation made before the move declares the built-in kinds as ``pipelines.kinds.*``."""
    from importlib.metadata import EntryPoint

    import medbench.kinds as kinds_module

    old = [EntryPoint(name=n, value=f"pipelines.kinds.{n}:{c}", group="medbench.kinds")
           for n, c in (("choice", "Choice"), ("score", "Score"), ("rubric", "Rubric"))]
    monkeypatch.setattr(kinds_module, "entry_points", lambda group: old if group == "medbench.kinds" else [])
    monkeypatch.setattr(kinds_module, "_registry", None)
    assert sorted(kinds_module.kinds()) == ["choice", "rubric", "score"]
    assert type(kinds_module.kind("score")).__module__ == "medbench.kinds.score"
