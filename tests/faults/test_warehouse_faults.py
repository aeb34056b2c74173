"""A damaged warehouse is served from what still works, answered in JSON, and repaired by the next publish.

Each fault of issue item 6 and 9, reproduced on a data directory with three kept versions: a
``CURRENT`` that is not UTF-8, a directory, unreadable to the server's user, or missing; the
current version file truncated; the served file deleted with nothing to fall back to; a truncated
predictions file. A fresh ``create_app`` is a server restart. Before the fix: a 500 text/plain (or
an exception out of the app), a 503 "nothing published yet" although older versions were kept, and
a predictions file served 200 under the published ETag. The live ``medbench serve`` checks (a crash
at start-up) are in the slow lane.
"""

from __future__ import annotations

import builtins
import datetime as dt
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.api_data import RUN_IDS, UTC, publish_fixture, publish_signed
from litestar.testing import TestClient

from api.app import create_app
from api.service import service_of
from support.live_server import medbench_serve
from medbench.layout import DataDir

RUN = RUN_IDS["medgemma-cqa0"]
PATHS = ["/healthz", "/v1/stats", "/v1/datasets", "/v1/tasks", "/v1/leaderboard?task=clinicalqa@0", "/v1/results",
         f"/v1/results/{RUN}", "/v1/lookup?model=medgemma-27b&task=clinicalqa@0", "/v1/openapi.json", "/v1/nope",
         f"/artifacts/{RUN}/predictions.parquet"]


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def text(self) -> str:
        return " | ".join(self.lines)


@pytest.fixture
def warnings_of() -> Iterator[Captured]:
    """The warehouse's warnings (on its own logger: the app's logging set-up replaces the root's handlers)."""
    handler, logger = Captured(), logging.getLogger("warehouse")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


@pytest.fixture
def three(tmp_path: Path) -> tuple[Path, list[str]]:
    """A data directory with three kept versions (the newest current): older, late run added, latest."""
    root = tmp_path / "data"
    versions = [publish_fixture(root, with_late_run=i == 1, now=dt.datetime(2026, 10, 29, 12, i, tzinfo=UTC)) for i in range(3)]
    assert len(set(versions)) == 3
    return root, versions


def version_file(root: Path, version: str) -> Path:
    return DataDir(root).version_file(version)


def truncate(path: Path, keep: float = 0.5) -> None:
    payload = path.read_bytes()
    path.write_bytes(payload[: int(len(payload) * keep)])


def answers(root: Path) -> Iterator[tuple[str, httpx.Response]]:
    """Every route once, from a freshly started app (a restart); never an exception out of the app."""
    with TestClient(create_app(root)) as client:
        for path in PATHS:
            yield path, client.get(path)


def assert_served(root: Path, version: str, pointer: str | None, warning: str) -> None:
    """Everything is answered from ``version``, and /healthz says it is a fallback and why."""
    for path, response in answers(root):
        if path == "/v1/nope":
            assert response.status_code == 404 and response.json()["error"] == "not_found"
            continue
        assert response.status_code == 200, (path, response.text)
        assert response.headers["x-medbench-warehouse"] == version, path
        if path == "/healthz":
            body = response.json()
            assert body["warehouse_version"] == version and body["served_from"] == "fallback", body
            assert body.get("pointer_version") == pointer and warning in body["warning"], body
        elif "artifacts" not in path:
            assert response.headers["content-type"].startswith("application/json"), path


def assert_unavailable(root: Path, cause: str) -> None:
    """Every route answers a JSON 503 naming ``cause`` (404 for an unknown path), no server path shown."""
    for path, response in answers(root):
        if path in ("/v1/nope", "/v1/openapi.json"):
            assert response.status_code in (404, 200), (path, response.status_code)
            continue
        assert response.status_code == 503, (path, response.status_code, response.text)
        assert response.headers["content-type"].startswith("application/json"), path
        body = response.json()
        assert body["error"] == "warehouse_unavailable" and cause in body["message"], (path, body)
        assert str(root) not in body["message"]


def test_a_non_utf8_pointer_falls_back_then_a_publish_repairs_it(three, warnings_of: Captured) -> None:
    root, versions = three
    DataDir(root).pointer.write_bytes(b"\xff\xfe2026\x00")
    assert_served(root, versions[2], None, "not UTF-8")
    version, changed = publish_signed(DataDir(root))  # same content as versions[2]
    assert (version, changed) == (versions[2], False)
    assert DataDir(root).pointer.read_text() == versions[2] + "\n"
    assert any("repaired the warehouse pointer" in line and "not UTF-8" in line for line in warnings_of.lines), warnings_of.lines
    with TestClient(create_app(root)) as client:
        assert client.get("/healthz").json() == {"status": "ok", "warehouse_version": versions[2]}


def test_a_directory_pointer_falls_back_then_is_set_aside(three, warnings_of: Captured) -> None:
    root, versions = three
    data = DataDir(root)
    data.pointer.unlink()
    data.pointer.mkdir()
    (data.pointer / "junk").write_text("x")
    assert_served(root, versions[2], None, "is a directory")
    assert publish_signed(data) == (versions[2], False)
    assert data.pointer.read_text() == versions[2] + "\n"
    assert [p.name for p in data.warehouse.glob("CURRENT.unusable-*")], "the directory was not set aside"
    assert "not a file" in warnings_of.text(), warnings_of.lines


def test_an_unreadable_pointer_falls_back(three, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a server running as another user sees a 0600 pointer (root ignores modes: see the setpriv
    test in test_warehouse_repair.py for the real thing)."""
    root, versions = three
    pointer, real_open = str(DataDir(root).pointer), os.open

    def refusing_open(file, *args, **kwargs):  # the pointer is opened by descriptor (medbench.files.open_regular)
        if str(file) == pointer:
            raise PermissionError(13, "Permission denied", file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    assert_served(root, versions[2], None, "permission denied")


def test_a_truncated_current_version_falls_back_and_the_next_publish_repairs(three, warnings_of: Captured) -> None:
    root, versions = three
    data = DataDir(root)
    truncate(version_file(root, versions[2]))
    assert_served(root, versions[1], versions[2], f"warehouse version {versions[2]} cannot be loaded")
    version, changed = publish_signed(data, now=dt.datetime(2026, 10, 29, 13, tzinfo=UTC))
    assert changed and version not in versions  # content differs from the fallback (versions[1])
    messages = warnings_of.text()
    assert f"warehouse version {versions[2]} cannot be read" in messages, messages
    assert f"deleting damaged warehouse version {versions[2]}" in messages, messages
    assert not version_file(root, versions[2]).exists()
    assert data.pointer.read_text() == version + "\n"
    assert os.path.realpath(data.duckdb_link) == str(version_file(root, version))
    assert sorted(data.warehouse.glob("medbench-*.duckdb")) == [version_file(root, v) for v in (versions[0], versions[1], version)]
    with TestClient(create_app(root)) as client:
        assert client.get("/healthz").json() == {"status": "ok", "warehouse_version": version}


def test_every_version_damaged_answers_503_with_the_cause(three) -> None:
    root, versions = three
    for version in versions:
        truncate(version_file(root, version), keep=0.3)
    assert_unavailable(root, f"warehouse version {versions[2]} cannot be loaded")
    assert_unavailable(root, "no kept version can be loaded either")
    DataDir(root).pointer.write_bytes(b"\x80")
    assert_unavailable(root, "warehouse/CURRENT is not UTF-8 text")


def test_health_turns_503_when_the_served_file_vanishes(tmp_path: Path) -> None:
    root = tmp_path / "data"
    version = publish_fixture(root)
    app = create_app(root)
    store = service_of(app).store
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
        version_file(root, version).unlink()
        store.refresh()
        health = client.get("/healthz")
        assert health.status_code == 503 and "its file is missing" in health.json()["message"], health.text
        stats = client.get("/v1/stats")
        assert stats.status_code == 503 and "cannot be loaded" in stats.json()["message"]
        publish_fixture(root, with_late_run=True)  # a publish brings it back
        store.refresh()
        assert client.get("/healthz").json()["status"] == "ok"


def test_a_truncated_predictions_file_is_refused_and_not_counted(tmp_path: Path) -> None:
    root = tmp_path / "data"
    publish_fixture(root)
    path = DataDir(root).predictions_path(RUN)
    good = path.read_bytes()
    app = create_app(root)
    reuses = service_of(app).reuses
    url = f"/artifacts/{RUN}/predictions.parquet"
    with TestClient(app) as client:
        ok = client.get(url)
        assert ok.status_code == 200 and ok.content == good
        etag, before = ok.headers["etag"], reuses.count
        path.write_bytes(good[: len(good) // 2])
        for response in (client.get(url), client.head(url), client.get(url, headers={"if-none-match": etag})):
            assert response.status_code == 503, response.status_code
            assert response.headers["content-type"].startswith("application/json")
            assert response.headers.get("etag") != etag
            if response.request.method == "GET":
                body = response.json()
                assert body["error"] == "artifact_unavailable" and "not the one published" in body["message"], body
                assert str(root) not in body["message"]
        assert reuses.count == before  # nothing was reused
        path.write_bytes(good)  # restored (new mtime): served again
        assert client.get(url).content == good and reuses.count == before + 1


@pytest.mark.slow
def test_medbench_serve_starts_and_answers_json_on_each_fault(three, tmp_path: Path) -> None:
    """The deployed server: no crash at start-up, no traceback, JSON with the cause (before: the
    banner's pointer read crashed ``medbench serve``)."""
    root, versions = three
    data = DataDir(root)
    data.pointer.write_bytes(b"\xff\xfe")
    truncate(version_file(root, versions[2]))
    for name in ("reuses.sqlite3", "reuses.json"):  # bad state files too: set aside, a fresh count starts
        (data.state / name).mkdir(parents=True)
    with medbench_serve(root, tmp_path / "serve-fallback.log") as server:
        health = httpx.get(f"{server.base}/healthz", timeout=10)
        assert health.status_code == 200 and health.json()["served_from"] == "fallback", health.text
        assert health.json()["warehouse_version"] == versions[1]
        assert httpx.get(f"{server.base}/v1/stats", timeout=10).json()["warehouse_version"] == versions[1]
        assert "warning: warehouse/CURRENT is not UTF-8 text" in server.log()  # the banner says so
    assert len(list(data.state.glob("reuses.*.unreadable-*"))) == 2
    for version in versions[:2]:
        truncate(version_file(root, version), keep=0.3)
    with medbench_serve(root, tmp_path / "serve-none.log") as server:
        for path in ("/healthz", "/v1/stats", "/v1/leaderboard?task=clinicalqa@0"):
            response = httpx.get(f"{server.base}{path}", timeout=10)
            assert response.status_code == 503 and response.json()["error"] == "warehouse_unavailable", response.text
            assert "not UTF-8" in response.json()["message"]
        log = server.log()
    assert "the published warehouse cannot be served (warehouse/CURRENT is not UTF-8 text" in log, log
    assert "Traceback" not in log, log
