"""A spec file nested absurdly deep is a spec error (one line ``file: problem``, exit 2), not a crash.

Issue #22: ``a = [[[...]]]`` 100,000 deep (or inline tables as deep) in a spec made ``medbench
materialize`` exit 1 with ``error: RecursionError: maximum recursion depth exceeded`` (the TOML
parser recurses once per level). Nesting is now bounded (``spec_decoding.MAX_DEPTH``) before
anything walks it, and the parser's own RecursionError is the same spec error. Through the CLI, on
a copy of the checkout's specs with one model file made deep.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.commands import run_medbench
from support.paths import REPO

DEEP = 100_000
VALUES = {
    "arrays": "[" * DEEP + "]" * DEEP,
    "inline-tables": "{b = " * DEEP + "1" + "}" * DEEP,
    "arrays-40": "[" * 40 + "]" * 40,  # within the parser's reach, beyond a spec's bound
}


@pytest.mark.parametrize("shape", VALUES)
def test_a_deeply_nested_spec_is_one_line_exit_2(tmp_path: Path, shape: str) -> None:
    specs = tmp_path / "specs"
    shutil.copytree(REPO / "specs", specs)
    path = specs / "models" / "medbench" / "random.toml"
    path.write_text(f"a = {VALUES[shape]}\n" + path.read_text())
    proc = run_medbench("materialize", "--demo", data=tmp_path / "data", check=False, timeout=300,
                        env={"MEDBENCH_SPECS": str(specs)})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(f"medbench: {path}: "), lines[0]
    assert "nested" in lines[0] and "Recursion" not in lines[0] and "Traceback" not in proc.stderr, lines[0]
