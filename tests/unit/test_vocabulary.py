"""One vocabulary, and docs that stand on their own (docs/concepts.md, "Glossary").

- One spelling, "materialize" (Dagster's and the CLI's), the ``Dataset`` protocol's method included.
  The old spellings that plug-ins written before may still use live in one module,
  ``medbench/old_spellings.py``; it and the few files that exercise them on purpose are exempt by path
  (``EXEMPT``, each with its reason). Elsewhere a line that names an old spelling carries the marker
  ``vocab: keep`` and says why on that line (the docs telling plug-in authors what to rename).
- No source file, test or docs page cites the two design notes outside the repository; each cites
  the docs page that says the same thing.
- No module of ``pipelines``, ``api`` or ``warehouse`` imports another module's private name: a name
  another module needs is public.
- No two modules share a file name without a reason given in the module: its docstring says
  "Its file name is shared on purpose: ..." (a package's ``__init__`` and pytest's ``conftest`` aside).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("medbench", "pipelines", "api", "warehouse", "tests", "bench", "docs", "scripts", "deploy", "examples", "specs")
TOP_FILES = ("README.md", "pyproject.toml", "mkdocs.yml", "dagster.yaml", "workspace.yaml")
SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".html", ".js", ".txt", ".cfg", ".sh", ".css"}

BRITISH = re.compile("materiali" + "s", re.IGNORECASE)
# path -> why it may spell it the old way
EXEMPT = {
    "medbench/old_spellings.py": "the one compatibility module: every old spelling plug-ins may still use",
    "tests/unit/test_old_spellings.py": "tests that the old spellings still work and warn",
    "tests/plugins/medbench_potassium/medbench_potassium/dataset.py": "a plug-in written with the old method on "
                                                                     "purpose, the proof it still materializes",
}
DESIGN_NOTES = re.compile(r"\b(CONTRACT|DESIGN)" + r"\.md\b|\bDESIGN's\b")


def _files() -> list[Path]:
    out = [REPO / f for f in TOP_FILES if (REPO / f).is_file()]
    for root in ROOTS:
        for p in sorted((REPO / root).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and (p.suffix in SUFFIXES or (root == "scripts" and not p.suffix)):
                out.append(p)
    return out


def _lines(pattern: re.Pattern) -> list[str]:
    hits = []
    for p in _files():
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{p.relative_to(REPO)}:{n}: {line.strip()}")
    return hits


def _allowed_spelling(hit: str) -> bool:
    where, line = hit.split(": ", 1)
    return where.rsplit(":", 1)[0] in EXEMPT or "vocab: keep" in line or not BRITISH.search(line)


def test_one_spelling_of_materialize() -> None:
    hits = [h for h in _lines(BRITISH) if not _allowed_spelling(h)]
    assert not hits, "spell it 'materialize' (or mark a pinned name with 'vocab: keep' and why):\n" + "\n".join(hits)


def test_the_allow_list_is_small_and_says_why() -> None:
    kept = [h for h in _lines(BRITISH) if "vocab: keep" in h]
    assert all(re.search(r"vocab: keep \(.+\)", h) for h in kept), kept
    assert len(kept) <= 3, kept  # today 2: the glossary and the changelog name the old spellings


def test_each_exempt_file_exists_and_needs_its_exemption() -> None:
    hits = {h.split(":", 1)[0] for h in _lines(BRITISH)}
    assert all(path in hits for path in EXEMPT), sorted(set(EXEMPT) - hits)


def test_no_source_or_docs_page_cites_the_design_notes() -> None:
    hits = [h for h in _lines(DESIGN_NOTES) if not h.startswith("tests/unit/test_vocabulary.py:")]
    assert not hits, "cite the docs/ page that says it instead:\n" + "\n".join(hits)


def _private_imports() -> list[str]:
    found = []
    for package in ("pipelines", "api", "warehouse"):
        for p in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                    continue
                if node.module.split(".")[0] not in ("pipelines", "api", "warehouse"):
                    continue  # another distribution's private name is that distribution's business
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{p.relative_to(REPO)}:{node.lineno}: from {node.module} import {alias.name}")
    return found


def test_no_private_name_is_imported_across_modules() -> None:
    found = _private_imports()
    assert not found, "make the name public, or move it to where it is used:\n" + "\n".join(found)


SHARED_NAME_ROOTS = ("medbench", "pipelines", "api", "warehouse", "bench", "tests/plugins", "tests/support")
SHARED_NAME_MARK = "Its file name is shared on purpose: "


SHIM_MARK = "Moved to ``"  # medbench.old_paths' shims say where the module went


def _shared_without_reason() -> list[str]:
    by_name: dict[str, list[Path]] = {}
    for top in SHARED_NAME_ROOTS:
        for p in sorted((REPO / top).rglob("*.py")):
            if "__pycache__" not in p.parts and p.name not in ("__init__.py", "conftest.py"):
                if not p.read_text(encoding="utf-8").startswith('"""' + SHIM_MARK):  # an old path's shim
                    by_name.setdefault(p.name, []).append(p)
    missing = []
    for paths in by_name.values():
        for p in paths if len(paths) > 1 else ():
            doc = ast.get_docstring(ast.parse(p.read_text(encoding="utf-8"))) or ""
            if SHARED_NAME_MARK not in " ".join(doc.split()):
                others = ", ".join(str(o.relative_to(REPO)) for o in paths if o != p)
                missing.append(f"{p.relative_to(REPO)} (also {others})")
    return missing


def test_a_shared_module_name_says_why() -> None:
    missing = _shared_without_reason()
    assert not missing, ("rename the module, or say in its docstring why the name is shared "
                         f"({SHARED_NAME_MARK}...):\n" + "\n".join(missing))


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    """The patterns match what they must (so a green run means something)."""
    assert BRITISH.search("re-" + "materiali" + "sed") and not BRITISH.search("materialized")
    assert not _allowed_spelling("x.py:1: " + "materiali" + "sing the demo")
    old_method, old_class = "materiali" + "se()", "Materiali" + "sed"
    assert not _allowed_spelling(f"x.py:1:     def {old_method}:")
    assert _allowed_spelling(f"medbench/old_spellings.py:9:     return dataset.{old_method}")
    assert not _allowed_spelling(f"medbench/outcomes.py:45: {old_class} = Materialized")
    assert DESIGN_NOTES.search("(" + "CONTRACT" + ".md)") and not DESIGN_NOTES.search("CONTRACT_PATHS")
