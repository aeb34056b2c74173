"""No shell runs anywhere in or around the sandbox: every command of ``pipelines/official`` and
``warehouse`` is an argv list (docs/official-tier.md, "Threat model").

A shell once read a name that came from a submitted wheel (``sh -c "... /wheel/{name}"``), and a
``;`` in that name ran the author's command at install. A static check, so it also covers code no
test runs: ``shell=True``, ``os.system``/``os.popen``, the ``commands``-style helpers of
``subprocess``, a shell named in an argv list, and ``sh -c`` written in a string.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from support.paths import REPO

SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}
SHELL_CALLS = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"), ("subprocess", "getstatusoutput")}
SHELL_TEXT = re.compile(r"\b(?:ba|da|z|k)?sh\s+-c\b")
MODULES = sorted([*(REPO / "pipelines" / "official").rglob("*.py"), *(REPO / "warehouse").rglob("*.py"), *(REPO / "medbench").rglob("*.py")])


def shell_uses(source: str) -> list[str]:
    """Each way ``source`` runs a shell, as 'line: what'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "shell" and not (isinstance(keyword.value, ast.Constant) and not keyword.value.value):
                    found.append(f"{node.lineno}: shell=...")
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                    (func.value.id, func.attr) in SHELL_CALLS:
                found.append(f"{node.lineno}: {func.value.id}.{func.attr}")
        elif isinstance(node, (ast.List, ast.Tuple)):
            for item in node.elts:
                if isinstance(item, ast.Constant) and isinstance(item.value, str) and \
                        Path(item.value).name in SHELLS:
                    found.append(f"{node.lineno}: {item.value!r} in an argv list")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SHELL_TEXT.search(node.value):
            found.append(f"{node.lineno}: 'sh -c' in a string")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_module_runs_a_shell(path: Path) -> None:
    assert shell_uses(path.read_text(encoding="utf-8")) == [], f"{path.relative_to(REPO)} runs a shell"


@pytest.mark.parametrize("source", [
    'subprocess.run("pip install x", shell=True)',
    'subprocess.run(cmd, shell=flag)',
    'os.system("pip install x")',
    'run(["/bin/sh", "-c", script])',
    'script = f"sh -c {x}"',
])
def test_the_check_sees_each_way_of_running_a_shell(source: str) -> None:
    assert shell_uses(source), source
