"""What a publish cleans and repairs (issue items 3 and 6): temporaries of killed writers, a link left
on an older version, a missing pointer, and file modes that a server running as another user needs.

Before: a kill mid-publish left ``.medbench-*.duckdb.*.tmp`` (and its ``.wal``) forever, killed
snapshot downloads their ``.*.tmp/`` folders; an unchanged publish returned early without looking
at the link; under ``umask 077`` the warehouse was readable by its owner only.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.api_data import UTC, publish_fixture, publish_signed

from medbench.files import switch_symlink
from medbench.layout import DataDir
from medbench.tempfiles import clean_stale_temp
from support.paths import REPO

OLD = time.time() - 3600


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def make(path: Path, folder: bool = False, mtime: float = OLD) -> Path:
    if folder:
        path.mkdir(parents=True)
        (path / "part-0.parquet").write_bytes(b"partial")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"partial")
    os.utime(path, (mtime, mtime))
    return path


def test_a_publish_removes_the_warehouse_temps_of_killed_publishes(tmp_path: Path) -> None:
    root = tmp_path / "data"
    version = publish_fixture(root)
    data, pid = DataDir(root), dead_pid()
    stale = [
        make(data.warehouse / f".medbench-20261101T000000000000Z-0badf00d.duckdb.{pid}.1.tmp"),
        make(data.warehouse / f".medbench-20261101T000000000000Z-0badf00d.duckdb.{pid}.1.tmp.wal"),
        make(data.warehouse / "medbench-20261101T000000000000Z-0badf00d.duckdb.tmp", mtime=time.time()),  # older naming
        make(data.warehouse / f".CURRENT.{os.getppid()}.7.tmp", mtime=time.time()),  # even a live PID: the lock says no publish runs
        make(root / f".medbench.duckdb.{pid}.2.link"),
    ]
    assert publish_signed(data) == (version, False)  # unchanged, and still cleans
    assert [p for p in stale if p.exists()] == []
    assert sorted(p.name for p in data.warehouse.iterdir()) == [".publish.lock", ".sound.json", "CURRENT", f"medbench-{version}.duckdb"]


def test_clean_stale_temp_spares_live_writers(tmp_path: Path) -> None:
    root = tmp_path / "data"
    data, pid = DataDir(root), dead_pid()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.2)
        gone = [
            make(data.snapshots("clinicalqa") / f".abc123.{pid}.1.tmp", folder=True),
            make(data.instances("clinicalqa@0") / f".instances.parquet.{pid}.3.tmp"),
            make(data.artifacts / "aaaaaaaaaaaa" / f".predictions.parquet.{pid}.4.tmp"),
            # a live PID, but that process started after the temp was last written: the PID was reused
            make(data.snapshots("vitaldb") / f".def456.{live.pid}.1.tmp", folder=True),
        ]
        kept = [
            make(data.snapshots("vitaldb") / f".fresh.{live.pid}.1.tmp", folder=True, mtime=time.time()),  # being written
            make(data.snapshots("vitaldb") / f".young.{pid}.1.tmp", folder=True, mtime=time.time()),  # under min_age_s
            make(data.snapshots("vitaldb") / f".mine.{os.getpid()}.1.tmp", folder=True),  # this process's
            make(data.snapshots("vitaldb") / "snapshot.json"),  # not a temp at all
        ]
        removed = clean_stale_temp(data)
        assert sorted(removed) == sorted(gone)
        assert [p for p in gone if p.exists()] == [] and all(p.exists() for p in kept)
        assert clean_stale_temp(data, min_age_s=0.0) == [kept[1]]  # the young one, once no age is required
    finally:
        live.kill()
        live.wait()


def test_an_unchanged_publish_repairs_the_link_and_the_pointer(tmp_path: Path) -> None:
    root = tmp_path / "data"
    data = DataDir(root)
    v1 = publish_fixture(root)
    v2 = publish_fixture(root, with_late_run=True, now=dt.datetime(2026, 10, 30, tzinfo=UTC))
    switch_symlink(data.duckdb_link, data.version_file(v1))  # a kill between the pointer's switch and the link's
    assert publish_signed(data, with_late_run=True) == (v2, False)
    assert os.path.realpath(data.duckdb_link) == str(data.version_file(v2))
    data.pointer.unlink()  # deleted by hand: readers fall back to the newest version, the publish rewrites it
    data.duckdb_link.unlink()
    assert publish_signed(data, with_late_run=True) == (v2, False)
    assert data.pointer.read_text() == v2 + "\n"
    assert os.path.realpath(data.duckdb_link) == str(data.version_file(v2))


@pytest.fixture
def umask_077() -> Iterator[None]:
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def public_data_dir() -> Path:
    """A scratch data directory that another user can reach (pytest's tmp_path is 0700)."""
    root = Path(tempfile.mkdtemp(prefix="medbench-faults-"))
    os.chmod(root, 0o755)
    return root


def test_published_files_are_world_readable_under_umask_077(umask_077) -> None:
    root = public_data_dir()
    try:
        data = DataDir(root / "data")
        data.root.mkdir()
        os.chmod(data.root, 0o755)  # the data root is the operator's to share (README)
        version = publish_fixture(data.root)
        assert stat.S_IMODE(data.warehouse.stat().st_mode) == 0o755
        assert stat.S_IMODE(data.pointer.stat().st_mode) == 0o644
        assert stat.S_IMODE(data.version_file(version).stat().st_mode) == 0o644
    finally:
        shutil.rmtree(root)


READER = """
import json, sys
from litestar.testing import TestClient
from api.app import create_app
with TestClient(create_app(sys.argv[1], extra_route_handlers=())) as c:
    out = {p: [c.get(p).status_code, c.get(p).json()] for p in ("/healthz", "/v1/stats")}
print(json.dumps(out))
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_a_server_running_as_another_user(umask_077) -> None:
    """Published under umask 077 by root, read by ``nobody``: served; then with the pointer made
    unreadable (chmod 000), the server falls back to the newest kept version, in JSON."""
    root = public_data_dir()
    try:
        data = DataDir(root / "data")
        data.root.mkdir()
        os.chmod(data.root, 0o755)  # the data root is the operator's to share (README)
        v1 = publish_fixture(data.root)
        v2 = publish_fixture(data.root, with_late_run=True, now=dt.datetime(2026, 10, 30, tzinfo=UTC))

        def as_nobody() -> dict:
            proc = subprocess.run(
                ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", sys.executable, "-c", READER,
                 str(data.root)],
                cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"},
                capture_output=True, text=True, timeout=120, check=False,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
            return json.loads(proc.stdout.strip().splitlines()[-1])

        served = as_nobody()
        assert served["/healthz"] == [200, {"status": "ok", "warehouse_version": v2}], served
        assert served["/v1/stats"][0] == 200
        os.chmod(data.pointer, 0)
        fallback = as_nobody()
        assert fallback["/healthz"][0] == 200 and fallback["/healthz"][1]["served_from"] == "fallback", fallback
        assert "permission denied" in fallback["/healthz"][1]["warning"]
        assert fallback["/v1/stats"][1]["warehouse_version"] == v2
        os.chmod(data.version_file(v2), 0o600)
        os.chmod(data.version_file(v1), 0o600)
        none = as_nobody()
        assert none["/healthz"][0] == 503 and none["/v1/stats"][0] == 503, none
        assert "permission denied" in none["/v1/stats"][1]["message"], none
        os.chmod(data.pointer, 0o600)  # the publisher repairs the modes too
        assert publish_signed(data, with_late_run=True)[1] is False
        assert stat.S_IMODE(data.pointer.stat().st_mode) == 0o644
    finally:
        shutil.rmtree(root)
