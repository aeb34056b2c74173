"""A damaged ``warehouse/CURRENT`` is repaired by the next plain ``medbench materialize`` (issue #22, item 4).

Before the fix: a pointer holding garbage made the run exit 1 with ``PointerError``; a pointer naming
a version that does not exist made it exit 0 printing "published warehouse <that version>", which was
never built, and left the pointer as it was, so the server stayed on its fallback for good. Each case
here runs after every result was reused (nothing would be published): the run must still repair the
pointer, say so, build no new version (a repair is not a release), and the server that was on its
fallback serves from the pointer again at its next pointer check.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.service import service_of
from support.commands import run_medbench
from medbench.layout import DataDir
from warehouse.versions import kept_versions, read_pointer

pytestmark = pytest.mark.slow

SELECTION = ("--demo", "--task", "clinicalqa@0", "--model", "medbench/random")
MISSING = "20991231T000000000000Z-deadbeef"


@pytest.fixture(scope="module")
def materialized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One small demo selection materialized once (copied by each test, which damages its copy)."""
    root = tmp_path_factory.mktemp("pointer-base") / "data"
    run_medbench("materialize", *SELECTION, data=root)
    return root, read_pointer(DataDir(root))


@pytest.fixture
def data(materialized: tuple[Path, str], tmp_path: Path) -> tuple[DataDir, str]:
    base, version = materialized
    root = tmp_path / "data"
    shutil.copytree(base, root, symlinks=True)
    return DataDir(root), version


def garbage(data: DataDir) -> None:
    data.pointer.write_text("this is not a version\n")


def empty(data: DataDir) -> None:
    data.pointer.write_bytes(b"")


def missing_version(data: DataDir) -> None:
    data.pointer.write_text(MISSING + "\n")


def corrupt_version(data: DataDir) -> None:
    data.version_file(MISSING).write_bytes(b"not a DuckDB database" * 100)
    data.pointer.write_text(MISSING + "\n")


def missing_pointer(data: DataDir) -> None:
    data.pointer.unlink()


def fifo_pointer(data: DataDir) -> None:
    """Issue 35: a FIFO ``CURRENT`` hung every route and the next materialize (open waits for a writer)."""
    data.pointer.unlink()
    os.mkfifo(data.pointer)


@pytest.mark.parametrize("damage", [garbage, empty, missing_version, corrupt_version, missing_pointer, fifo_pointer],
                         ids=lambda f: f.__name__)
def test_an_all_reused_run_repairs_the_pointer_without_a_new_version(data: tuple[DataDir, str], damage) -> None:
    data, version = data
    damage(data)
    files_before = sorted(p.name for p in data.warehouse.glob("medbench-*.duckdb"))
    app = create_app(data.root)
    store = service_of(app).store
    with TestClient(app) as client:
        health = client.get("/healthz").json()
        assert health["served_from"] == "fallback" and health["warehouse_version"] == version, health

        proc = run_medbench("materialize", *SELECTION, data=data.root, check=False)

        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert " reused " in proc.stdout and " ran " not in proc.stdout, proc.stdout
        assert "repaired warehouse/CURRENT: " in proc.stdout and f"now {version}" in proc.stdout, proc.stdout
        assert f"published warehouse {version}:" in proc.stdout
        assert f"published warehouse {MISSING}" not in proc.stdout
        assert read_pointer(data) == version
        assert data.duckdb_link.resolve() == data.version_file(version).resolve()
        # a repair is not a release: the valid version is pointed at, nothing is built
        assert sorted(p.name for p in data.warehouse.glob("medbench-*.duckdb")) == files_before

        store.refresh()  # the next pointer check of the running server
        health = client.get("/healthz").json()
        assert health == {"status": "ok", "warehouse_version": version}, health  # no fallback, no warning
        stats = client.get("/v1/stats")
        assert stats.status_code == 200 and stats.headers["x-medbench-warehouse"] == version


def test_a_repaired_pointer_and_link_print_one_line_each(data: tuple[DataDir, str]) -> None:
    data, version = data
    missing_version(data)
    data.duckdb_link.unlink()
    proc = run_medbench("materialize", *SELECTION, data=data.root)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("repaired ")]
    assert lines == [f"repaired warehouse/CURRENT: it named a missing version ({MISSING}); now {version}",
                     f"repaired medbench.duckdb: it was missing; now it points at version {version}"], proc.stdout
    again = run_medbench("materialize", *SELECTION, data=data.root)  # nothing left to repair
    assert "\nrepaired " not in again.stdout and f"published warehouse {version}:" in again.stdout


def test_with_no_valid_version_left_the_repair_publishes_one(data: tuple[DataDir, str]) -> None:
    """Nothing kept can be pointed at: the run publishes a new version from the artifacts, and the
    pointer names it (never the missing one)."""
    data, version = data
    missing_version(data)
    data.version_file(version).unlink()
    proc = run_medbench("materialize", *SELECTION, data=data.root)
    new = read_pointer(data)
    assert new not in (version, MISSING) and kept_versions(data) == [new]
    assert f"repaired warehouse/CURRENT: it named a missing version ({MISSING}); now {new}" in proc.stdout
    assert f"published warehouse {new}:" in proc.stdout
