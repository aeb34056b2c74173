"""``api`` and ``warehouse`` import no Dagster and, of ``pipelines``, only ``medbench.stats`` (docs/concepts.md, "The dependency rule").

``tests/unit/test_import_layers.py`` checks the same rule statically (import-linter); this one checks
what a real import of every module, and a real app, pulls in at run time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.paths import REPO as ROOT

PROBE = """
import importlib, pkgutil, sys
import api, warehouse
names = []
for package in (api, warehouse):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        names.append(module.name)
        importlib.import_module(module.name)
from api.app import create_app
create_app()
allowed = ("pipelines", "medbench.stats", "medbench", "medbench.kinds")  # the package, its statistics, core and kinds
bad = sorted(
    m for m in sys.modules
    if m.split(".")[0] == "dagster" or m.startswith("dagster_")
    or (m.split(".")[0] == "pipelines" and m not in allowed and not m.startswith(tuple(a + "." for a in allowed[1:])))
)
print("imported", len(names), "modules")
assert "api.app" in names and "warehouse.publish" in names, names
assert not bad, bad
"""


def test_api_and_warehouse_import_no_dagster_and_only_pipelines_stats(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "MEDBENCH_DATA": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "imported" in result.stdout
