"""Errors a person can act on: one line ``file: key: problem``, exit 2, no traceback; ``--debug``
shows the traceback; an unexpected error is one ``error: ...`` line with the --debug hint, exit 1.

The fault: spec errors named file and key, but inside a ~20-line traceback; ``medbench score`` gave
tracebacks for deeply nested JSON, a 5,000-digit id and a lone surrogate.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipelines.cli.main import main
from test_score_command import data_dir, gold  # noqa: F401 (fixtures)
from support.paths import REPO

RANDOM = Path("models/medbench/random.toml")


def _edit(root: Path, rel: Path, old: str, new: str) -> Path:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def _score(tmp_path: Path, *extra: str) -> list[str]:
    out = tmp_path / "out.jsonl"
    if not out.exists():
        out.write_text('{"instance_id": 1, "output": "A"}\n')
    return [*extra, "score", "--task", "clinicalqa@0", "--outputs", str(out)]


CASES = {
    "unknown key": (RANDOM, 'name = "', 'colour = "red"\nname = "', "unknown key `colour`"),
    "missing key": (RANDOM, 'name = "Uniform random choice"\n', "", "missing required key `name`"),
    "wrong type": (RANDOM, 'revision = "1"', "revision = 1", "key `revision`: expected `str`, got `int`"),
    "slug/path mismatch": (RANDOM, 'slug = "medbench/random"', 'slug = "medbench/randomer"', "key `slug` is"),
    "unknown task": (RANDOM, 'tasks = ["clinicalqa@0"]', 'tasks = ["clinicalqa@9"]', "names unknown task"),
    "bad date": (Path("datasets/clinicalqa.toml"), "public_since = ", "public_since = 2026-13-01\n#", "not valid TOML"),
}


@pytest.mark.parametrize("case", CASES)
def test_spec_errors_are_one_line_and_exit_2(case: str, tmp_path: Path, monkeypatch, capsys) -> None:
    rel, old, new, problem = CASES[case]
    root = tmp_path / "specs"
    shutil.copytree(REPO / "specs", root)
    path = _edit(root, rel, old, new)
    monkeypatch.setenv("MEDBENCH_SPECS", str(root))
    assert main(_score(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{path}: " in err and problem in err, err


def test_a_spec_that_is_not_utf8_names_the_file(tmp_path: Path, monkeypatch, capsys) -> None:
    root = tmp_path / "specs"
    shutil.copytree(REPO / "specs", root)
    path = root / RANDOM
    path.write_bytes(path.read_bytes().replace(b"Uniform random choice", b"Uniform \xff choice"))
    monkeypatch.setenv("MEDBENCH_SPECS", str(root))
    assert main(_score(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err == f"medbench: {path}: not UTF-8 text (byte 0xff on line 2); save it as UTF-8\n"


def test_debug_shows_the_traceback(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "specs"
    shutil.copytree(REPO / "specs", root)
    _edit(root, RANDOM, 'revision = "1"', "revision = 1")
    monkeypatch.setenv("MEDBENCH_SPECS", str(root))
    from pipelines.engine.specs import SpecError

    with pytest.raises(SpecError):
        main(_score(tmp_path, "--debug"))
    with pytest.raises(SpecError):
        main([*_score(tmp_path), "--debug"])  # anywhere on the command line


def test_an_unexpected_error_is_one_line_with_the_hint(tmp_path: Path, monkeypatch, capsys) -> None:
    import pipelines.cli.score as score

    def boom(args):
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(score, "run", boom)  # add_parser reads it when main builds the parser
    assert main(_score(tmp_path)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: RuntimeError: disk on fire second line") and "--debug" in err


def _hostile(gold: list[dict], line: str) -> list[str]:
    lines = [json.dumps({"instance_id": str(r["question_id"]), "output": "정답: A"}) for r in gold]
    lines[3] = line
    return lines


HOSTILE = {
    "deeply nested JSON": ("[" * 100_000 + "]" * 100_000, "line 4: JSON nested too deeply"),
    "5,000-digit id": ('{"instance_id": ' + "7" * 5000 + ', "output": "A"}', "line 4: not usable JSON"),
    "lone surrogate": ('{"instance_id": "1", "output": "\\ud800 A"}', "line 4: field `output` holds a lone surrogate"),
    "lone surrogate id": ('{"instance_id": "\\udfff", "output": "A"}', "line 4: field `instance_id` holds a lone"),
    "huge integer id": ('{"instance_id": ' + "9" * 40 + ', "output": "A"}', "line 4: field `instance_id` is an integer"),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_outputs_files_are_one_line(case: str, tmp_path: Path, gold: list[dict], capsys) -> None:  # noqa: F811
    line, problem = HOSTILE[case]
    out = tmp_path / "out.jsonl"
    out.write_text("\n".join(_hostile(gold, line)) + "\n", encoding="utf-8")
    code = main(["score", "--task", "clinicalqa@0", "--outputs", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err  # score: 1 = a bad outputs file
    assert f"{out} {problem}" in err, err
