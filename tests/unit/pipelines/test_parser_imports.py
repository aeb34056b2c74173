"""The answer parser has no import loop: the versions share one public tokeniser, v2 never imports v1.

Read from the source (``ast``), not by importing, so a loop hidden inside a function (an import
placed there to dodge the cycle) or behind ``TYPE_CHECKING`` is found too. lint-imports keeps the
layers (``versions -> v3 -> v3_reading -> (v1 | v2 | v3_base | v3_rules) -> (v2_rules | v3_scan) -> v3_find
-> tokens``, pyproject.toml); these tests say what broke in plain words and cover the whole clinicalqa task package.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support.paths import REPO

CLINICALQA = REPO / "pipelines" / "tasks" / "clinicalqa"
PARSING = CLINICALQA / "parsing"


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _project_imports(path: Path) -> list[tuple[ast.stmt, str, list[str]]]:
    """Each import of a project module in ``path``: (node, module, imported names)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in ("medbench", "pipelines", "api", "warehouse"):
                out.append((node, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(node, a.name, []) for a in node.names if a.name.split(".")[0] in ("medbench", "pipelines", "api", "warehouse")]
    return out


def _targets(module: str, names: list[str], known: set[str]) -> set[str]:
    """The modules an import reaches: ``from pkg import sub`` reaches ``pkg.sub``."""
    reached = {f"{module}.{n}" for n in names if f"{module}.{n}" in known}
    return reached or {module}


def _graph(root: Path) -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in root.rglob("*.py")}
    known = set(paths)
    return {
        name: {t for _, module, names in _project_imports(path) for t in _targets(module, names, known) if t in known}
        for name, path in paths.items()
    }


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_clinicalqa_task_package_has_no_import_loop() -> None:
    loop = _cycle(_graph(CLINICALQA))
    assert loop is None, "import loop: " + " -> ".join(loop or [])


def test_parser_modules_import_no_private_name_of_another_module() -> None:
    """What one parser module needs from another is public: a private import ties a version to another's insides."""
    private = [
        f"{p.relative_to(REPO)}:{node.lineno} imports {name} from {module}"
        for p in sorted(CLINICALQA.rglob("*.py"))
        for node, module, names in _project_imports(p)
        for name in names
        if name.startswith("_") and (module.startswith("pipelines.tasks.clinicalqa.pars") or p.is_relative_to(PARSING))
    ]
    assert not private, "; ".join(private)


def test_parser_modules_import_at_the_top_only() -> None:
    """No import inside a function and no ``if TYPE_CHECKING`` import: both are ways to hide a loop."""
    hidden = []
    for p in sorted(PARSING.rglob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        top = {id(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
        hidden += [
            f"{p.relative_to(REPO)}:{n.lineno}"
            for n in ast.walk(tree)
            if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in top
        ]
    assert not hidden, "imports below the top of a parser module: " + ", ".join(hidden)


def test_versions_share_only_the_tokeniser() -> None:
    graph = _graph(CLINICALQA)
    prefix = "pipelines.tasks.clinicalqa.parsing."
    assert graph[prefix + "tokens"] == set(), "the shared tokeniser imports no version"
    assert graph[prefix + "v1"] == {prefix + "tokens"}, "the frozen v1 imports the shared tokeniser only"
    assert graph[prefix + "v2"] == {prefix + "tokens", prefix + "v2_rules"}, "v2 imports the tokeniser and its rules"
    assert graph[prefix + "v2_rules"] == {prefix + "tokens"}
    assert graph[prefix + "v3"] == {prefix + "tokens", prefix + "v3_reading", prefix + "v3_find", prefix + "v3_scan",
                                     prefix + "v3_rules"}, (
        "v3 reimplements what it takes from v2 in its own modules, and never calls the frozen v1 or v2"
    )
    assert graph[prefix + "v3_reading"] == {prefix + "tokens", prefix + "v3_base", prefix + "v3_find", prefix + "v3_scan"}
    assert graph[prefix + "v3_base"] == {prefix + "tokens", prefix + "v3_find", prefix + "v3_scan"}
    assert graph[prefix + "v3_rules"] == {prefix + "tokens", prefix + "v3_find", prefix + "v3_scan"}
    assert graph[prefix + "v3_scan"] == {prefix + "tokens", prefix + "v3_find"}
    assert graph[prefix + "v3_find"] == {prefix + "tokens"}
    assert graph[prefix + "versions"] == {prefix + "tokens", prefix + "v1", prefix + "v2", prefix + "v3", prefix + "v4"}


def test_v4_imports_no_earlier_version() -> None:
    """v4 reimplements v3's reading (v2 is frozen and v3 is rewritten apart): it reaches the shared
    tokeniser and its own modules only, never v1, v2, v3 or their rules."""
    graph = _graph(CLINICALQA)
    prefix = "pipelines.tasks.clinicalqa.parsing."
    own = {m for m in graph if m.startswith(prefix + "v4")}
    assert own >= {prefix + "v4", prefix + "v4_base", prefix + "v4_core", prefix + "v4_tokens"}
    for module in own:
        assert graph[module] <= own | {prefix + "tokens"}, (module, graph[module] - own)
