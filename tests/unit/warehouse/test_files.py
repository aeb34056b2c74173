"""The one atomic-write helper: readers see the old content or the whole new one, and nothing is left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from medbench.files import (
    atomic_directory,
    atomic_path,
    atomic_write_bytes,
    switch_pointer,
    switch_symlink,
)


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_write_replaces_whole_content_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "result.json"
    atomic_write_bytes(target, b"one")
    atomic_write_bytes(target, b"two")
    assert target.read_bytes() == b"two" and _listing(target.parent) == ["result.json"]


def test_a_failing_writer_keeps_the_old_file_and_removes_its_temp(tmp_path: Path) -> None:
    target = tmp_path / "items.parquet"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            assert tmp.parent == target.parent and tmp.name.startswith(".items.parquet.")
            tmp.write_bytes(b"half")
            raise RuntimeError("killed mid-write")
    assert target.read_bytes() == b"old" and _listing(tmp_path) == ["items.parquet"]


def test_pointer_and_symlink_switch(tmp_path: Path) -> None:
    (tmp_path / "warehouse").mkdir()
    (tmp_path / "warehouse" / "v1.duckdb").write_bytes(b"1")
    (tmp_path / "warehouse" / "v2.duckdb").write_bytes(b"2")
    switch_pointer(tmp_path / "warehouse" / "CURRENT", "v1")
    switch_pointer(tmp_path / "warehouse" / "CURRENT", "v2")
    assert (tmp_path / "warehouse" / "CURRENT").read_text() == "v2\n"
    link = tmp_path / "medbench.duckdb"
    switch_symlink(link, tmp_path / "warehouse" / "v1.duckdb")
    switch_symlink(link, tmp_path / "warehouse" / "v2.duckdb")
    assert os.readlink(link) == os.path.join("warehouse", "v2.duckdb") and link.read_bytes() == b"2"
    assert _listing(tmp_path) == ["medbench.duckdb", "warehouse"]


def test_directory_appears_complete_or_not_at_all(tmp_path: Path) -> None:
    final = tmp_path / "snap"
    with pytest.raises(RuntimeError):
        with atomic_directory(final) as tmp:
            (tmp / "a.parquet").write_bytes(b"a")
            raise RuntimeError("killed")
    assert _listing(tmp_path) == []
    with atomic_directory(final, marker="snapshot.json") as tmp:
        (tmp / "snapshot.json").write_text("{}")
    assert _listing(final) == ["snapshot.json"]
    # Same content-addressed name written again (a concurrent writer lost): ours is discarded.
    with atomic_directory(final, marker="snapshot.json") as tmp:
        (tmp / "snapshot.json").write_text("{}")
        (tmp / "extra").write_text("x")
    assert _listing(final) == ["snapshot.json"] and _listing(tmp_path) == ["snap"]


def test_directory_rename_failure_without_a_complete_winner_is_raised(tmp_path: Path) -> None:
    final = tmp_path / "snap"
    final.mkdir()
    (final / "partial").write_text("x")  # no marker: not a complete snapshot
    with pytest.raises(OSError):
        with atomic_directory(final, marker="snapshot.json") as tmp:
            (tmp / "snapshot.json").write_text("{}")
    assert _listing(tmp_path) == ["snap"]
