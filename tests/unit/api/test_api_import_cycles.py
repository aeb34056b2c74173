"""No module of ``api`` imports, through any chain, a module that imports it back.

The ``acyclic_siblings`` contract in pyproject.toml (``tests/unit/test_import_layers.py`` runs it) sees
loops between sibling modules and packages; this one also sees a loop between a package and one of
its own modules (``api.routes`` gathers ``api.routes.openapi``, which documents every route). Imports
inside functions and under ``TYPE_CHECKING`` count: a loop they hide is still a loop.
"""

from __future__ import annotations

import subprocess
import sys

from support.paths import REPO as ROOT

PROBE = """
import grimp
graph = grimp.build_graph("api")
loops = sorted(
    (importer, imported)
    for importer in graph.modules
    for imported in graph.find_modules_directly_imported_by(importer)
    if graph.chain_exists(importer=imported, imported=importer)
)
print(len(graph.modules), "modules")
for importer, imported in loops:
    print("LOOP", importer, "->", imported, "->", " -> ".join(graph.find_shortest_chain(imported, importer)[1:]))
"""


def test_no_module_of_api_is_on_an_import_loop() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " modules" in result.stdout, result.stdout
    assert "LOOP" not in result.stdout, result.stdout
