"""No module over 400 lines (the brief's rule): small modules whose names explain themselves.

Counted over every Python file of the packages and the benches, so a module that grows past the
limit fails here rather than in a review."""

from pathlib import Path

import pytest
from support.paths import REPO

LIMIT = 400
MODULES = sorted(p for pkg in ("medbench", "pipelines", "api", "warehouse", "bench") for p in (REPO / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(REPO)))
def test_module_is_small(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= LIMIT, f"{path.relative_to(REPO)} has {lines} lines (limit {LIMIT}): split it by what it does"
