"""One default data directory for every command (issue #40): ``./data``, and an earlier version's
``data/demo`` found and used, with a one-line notice, rather than silently ignored (docs/concepts.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medbench import layout


def test_the_default_is_data_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert layout.default_data_dir(tmp_path / "data") == (tmp_path / "data").resolve()
    (tmp_path / "data" / "demo").mkdir(parents=True)  # a folder named demo, not a data directory
    assert layout.default_data_dir(tmp_path / "data") == (tmp_path / "data").resolve()
    assert capsys.readouterr().err == ""


def test_an_earlier_demo_directory_is_found_with_one_notice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    earlier = tmp_path / "data" / "demo"
    earlier.mkdir(parents=True)
    (earlier / "KIND").write_text("demo\n")
    assert layout.default_data_dir(tmp_path / "data") == earlier.resolve()
    assert layout.default_data_dir(tmp_path / "data") == earlier.resolve()
    notice = capsys.readouterr().err.strip().splitlines()
    assert len(notice) == 1 and str(earlier) in notice[0] and layout.DATA_ENV in notice[0], notice
    (tmp_path / "data" / "KIND").write_text("demo\n")  # once ./data is used, it wins
    assert layout.default_data_dir(tmp_path / "data") == (tmp_path / "data").resolve()


def test_the_demo_command_uses_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect

    from pipelines.cli import demo

    assert "data/demo" not in inspect.getsource(demo) and '"demo"' not in inspect.getsource(demo).split("def run", 1)[1]
    monkeypatch.delenv(layout.DATA_ENV, raising=False)
    assert layout.data_root() == layout.default_data_dir()


def test_where_names_the_directory_and_the_choice(tmp_path: Path) -> None:
    assert layout.where(tmp_path) == f"in {tmp_path} (choose another with MEDBENCH_DATA=DIR)"
    assert "--data DIR or MEDBENCH_DATA=DIR" in layout.where(tmp_path, flag=True)


def test_an_unknown_token_names_the_directory_looked_in(tmp_path: Path) -> None:
    from support.commands import run_medbench

    proc = run_medbench("tokens", "revoke", "0123456789ab", data=tmp_path / "data", check=False)
    assert proc.returncode == 1 and str((tmp_path / "data").resolve()) in proc.stderr, proc.stderr
    assert "MEDBENCH_DATA=DIR" in proc.stderr and "Traceback" not in proc.stderr
