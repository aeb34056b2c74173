"""Kinds own their shapes (docs/adding-a-task.md, "A new kind"): no code outside ``medbench/kinds/``
compares a task's kind with the built-ins' names, and no module under ``api/`` reads a result's
extras by key, so a plug-in kind needs no edit of the engine, the warehouse or the site.

Column names are not kinds: the pinned ``score`` Parquet column is read as ``column("score")``,
which is a call, not a comparison, and is allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support.paths import REPO

KIND_NAMES = {"choice", "score", "rubric"}
EXTRAS_KEYS = {"roc", "calibration_curve", "decision_curve", "by_category", "unparsed_sample", "by_criterion"}


def _sources(*roots: str, skip: str | None = None) -> list[Path]:
    out = []
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            if skip is None or not path.is_relative_to(REPO / skip):
                out.append(path)
    return out


def _constants(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def kind_comparisons(source: str) -> list[int]:
    """Lines where a comparison (``==``, ``!=``, ``in``, ``not in``) has a built-in kind's name on one side."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_constants(side) & KIND_NAMES for side in sides):
                lines.append(node.lineno)
    return lines


def extras_reads(source: str) -> list[int]:
    """Lines that read one of the named extras keys: ``x["roc"]``, ``x.get("roc")``, ``"roc" in x``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and _constants(node.slice) & EXTRAS_KEYS:
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop")
              and node.args and _constants(node.args[0]) & EXTRAS_KEYS):
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and _constants(node.left) & EXTRAS_KEYS:
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and any(_constants(c) & EXTRAS_KEYS for c in node.comparators):
            lines.append(node.lineno)
    return lines


def test_the_checks_catch_what_they_look_for() -> None:
    assert kind_comparisons('if task.kind == "score": pass') == [1]
    assert kind_comparisons('x = kind in ("choice", "other")') == [1]
    assert kind_comparisons('t.column("score")') == []
    assert extras_reads('roc = r.extras.get("roc")') == [1]
    assert extras_reads('c = extras["by_category"]') == [1]
    assert extras_reads('{k: v for k, v in e.items() if k != "unparsed_sample"}') == [1]


def test_no_code_outside_the_kinds_compares_a_kind_with_a_builtin_name() -> None:
    found = {str(p.relative_to(REPO)): kind_comparisons(p.read_text())
             for p in _sources("medbench", "pipelines", "api", "warehouse", skip="medbench/kinds")}
    assert {p: lines for p, lines in found.items() if lines} == {}


def test_no_module_under_api_reads_an_extras_key_by_name() -> None:
    found = {str(p.relative_to(REPO)): extras_reads(p.read_text()) for p in _sources("api")}
    assert {p: lines for p, lines in found.items() if lines} == {}
