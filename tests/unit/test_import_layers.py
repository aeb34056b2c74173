"""The layers of the dependency rule (docs/concepts.md) hold: ``lint-imports`` keeps every contract in pyproject.toml.

The contracts (``[tool.importlinter]``): ``api`` imports, of this project, only ``warehouse`` and
``medbench.stats``; ``medbench.stats`` imports numpy and the standard library only; ``api`` and
``warehouse`` import no Dagster and no model library; only the CLI imports ``api``. A static check,
so it also sees imports inside functions and in modules no test imports; ``test_api_imports``
checks what a real import pulls in at run time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from support.paths import REPO as ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")  # installed by the `test` extra


def test_import_contracts_are_kept() -> None:
    result = subprocess.run(
        [str(LINT_IMPORTS), str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"], cwd=ROOT,
        capture_output=True, text=True, timeout=300, check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout, result.stdout


def test_every_folder_of_code_is_a_package() -> None:
    """A folder of ``.py`` files without ``__init__.py`` is a namespace package, which no import contract
    names: ``pipelines/official`` once imported the CLI and Dagster with every contract kept. Alembic's
    migrations are scripts it loads by path, not a package."""
    missing = []
    for top in ("medbench", "warehouse", "api", "pipelines"):
        for folder in sorted({p.parent for p in (ROOT / top).rglob("*.py")}):
            rel = folder.relative_to(ROOT)
            if "migrations" in rel.parts or "__pycache__" in rel.parts:
                continue
            if not (folder / "__init__.py").exists():
                missing.append(str(rel))
    assert not missing, f"folders of code that are not packages (add an __init__.py): {missing}"
