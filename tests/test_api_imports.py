"""``api`` and ``warehouse`` import no Dagster and no ``pipelines`` (DESIGN.md's dependency rule)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

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
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("dagster", "pipelines") or m.startswith("dagster_"))
print("imported", len(names), "modules")
assert "api.app" in names and "warehouse.publish" in names, names
assert not bad, bad
"""


def test_api_and_warehouse_import_no_dagster_and_no_pipelines(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "MEDBENCH_DATA": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "imported" in result.stdout
