"""Files the server and the publisher open by name must be regular files (issue 35, item 7).

The fault: ``warehouse/CURRENT`` replaced by a FIFO hung every route of the server (``open`` waits
for a writer) and the next ``medbench materialize`` too. Now every such file is opened with
``O_NONBLOCK`` and checked with ``fstat`` (``medbench.files.open_regular``): a FIFO or a device
``CURRENT`` is a damaged pointer, readers fall back to the newest sound version, and the next publish
moves it aside and rewrites it, like every other damaged pointer (tests/faults/test_pointer_repair.py
runs the same through ``medbench materialize``). Each call here runs in a thread with a deadline, so
that a hang fails the test instead of hanging it; the FIFO's write end is opened at clean-up, which
releases a reader stuck in ``open``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient
from support.api_data import publish_fixture, publish_signed

from api.app import create_app
from medbench.files import NotRegularFile, open_regular, read_regular
from medbench.layout import DataDir
from warehouse.repair import repair_current
from warehouse.versions import PointerError, check, choose, read_pointer

DEADLINE_S = 20.0


def within_deadline(call: Callable[[], Any]) -> Any:
    """``call()``'s value or exception, or a failure when it is still blocked after the deadline."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    if thread.is_alive():
        pytest.fail(f"still blocked after {DEADLINE_S} s (a FIFO opened by name)")
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.fixture
def fifos() -> Iterator[list[Path]]:
    made: list[Path] = []
    yield made
    for path in made:  # release any reader still blocked in open(): give it a writer
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass


def make_fifo(path: Path, fifos: list[Path]) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    fifos.append(path)


@pytest.fixture
def published(tmp_path: Path) -> tuple[DataDir, str]:
    root = tmp_path / "data"
    return DataDir(root), publish_fixture(root)


def test_open_regular_refuses_a_fifo_and_a_device_at_once(tmp_path: Path, fifos: list[Path]) -> None:
    make_fifo(tmp_path / "f", fifos)
    with pytest.raises(NotRegularFile, match="is a FIFO"):
        within_deadline(lambda: open_regular(tmp_path / "f"))
    with pytest.raises(NotRegularFile, match="is a device"):
        within_deadline(lambda: read_regular("/dev/zero", 10))
    with pytest.raises(IsADirectoryError):
        read_regular(tmp_path)
    (tmp_path / "ok").write_bytes(b"abc")
    assert read_regular(tmp_path / "ok") == b"abc" and read_regular(tmp_path / "ok", 2) == b"ab"


def test_a_fifo_current_is_a_damaged_pointer(published: tuple[DataDir, str], fifos: list[Path]) -> None:
    data, version = published
    make_fifo(data.pointer, fifos)
    with pytest.raises(PointerError, match="warehouse/CURRENT is a FIFO, not a regular file"):
        within_deadline(lambda: read_pointer(data))
    chosen = within_deadline(lambda: choose(data))
    assert chosen.version == version and chosen.fallback, chosen


def test_a_device_current_is_a_damaged_pointer(published: tuple[DataDir, str]) -> None:
    data, version = published
    data.pointer.unlink()
    data.pointer.symlink_to("/dev/zero")
    with pytest.raises(PointerError, match="is a device"):
        within_deadline(lambda: read_pointer(data))
    assert within_deadline(lambda: repair_current(data)) == [
        f"repaired warehouse/CURRENT: it was a device, not a regular file; now {version}"]
    assert read_pointer(data) == version and not data.pointer.is_symlink()


def test_a_fifo_current_never_hangs_a_route_and_is_repaired(published: tuple[DataDir, str], fifos: list[Path]) -> None:
    data, version = published
    make_fifo(data.pointer, fifos)
    app = create_app(data.root)
    with TestClient(app) as client:
        health = within_deadline(lambda: client.get("/healthz").json())
        assert health["served_from"] == "fallback" and health["warehouse_version"] == version, health
        stats = within_deadline(lambda: client.get("/v1/stats"))
        assert stats.status_code == 200 and stats.headers["x-medbench-warehouse"] == version
    # the publisher repairs it like any damaged pointer: moved aside, rewritten
    assert within_deadline(lambda: publish_signed(data)) == (version, False)
    assert data.pointer.is_file() and read_pointer(data) == version
    assert [p.name for p in data.warehouse.glob("CURRENT.unusable-*")], "the FIFO was not moved aside"


def test_a_fifo_in_place_of_a_version_file_is_damaged(published: tuple[DataDir, str], fifos: list[Path]) -> None:
    data, version = published
    fake = "20991231T000000000000Z-deadbeef"
    make_fifo(data.version_file(fake), fifos)
    assert within_deadline(lambda: check(data, fake)) == "its file is a FIFO, not a regular file"
    chosen = within_deadline(lambda: choose(data))
    assert chosen.version == version


def test_fifo_logs_and_records_never_block_the_server(published: tuple[DataDir, str], fifos: list[Path]) -> None:
    data, version = published
    for path in (data.release_log, data.withdrawal_log):
        make_fifo(path, fifos)
    app = create_app(data.root)
    with TestClient(app) as client:
        for route in ("/v1/stats", "/v1/releases"):
            answer = within_deadline(lambda: client.get(route))
            assert answer.status_code in (200, 503), (route, answer.status_code, answer.text[:300])
