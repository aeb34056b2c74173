"""Reuses: what counts, visible at once, flushed while running and at shutdown, kept across restarts,
never written into the warehouse; the SQLite store: the old JSON count moved in once, and a bad state
file set aside instead of stopping the server. (Several processes: tests/faults/test_workers.py.)"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.reuse import STORE_NAME, ReuseCounter
from support.api_data import RUN_IDS

RUN = RUN_IDS["medgemma-cqa0"]
LOOKUP = "/v1/lookup?model=medgemma-27b&task=clinicalqa@0"
PREDICTIONS = f"/artifacts/{RUN}/predictions.parquet"


def reuses(client: TestClient) -> int:
    return client.get("/v1/stats").json()["reuses"]


def warehouse_fingerprint(root: Path) -> dict[str, str]:
    files = [p for p in (root / "warehouse").rglob("*") if p.is_file()]
    fingerprint = {str(p.relative_to(root)): f"{p.stat().st_mtime_ns}:{hashlib.sha256(p.read_bytes()).hexdigest()}" for p in files}
    fingerprint["medbench.duckdb ->"] = str((root / "medbench.duckdb").resolve())
    return fingerprint


def test_what_counts_as_a_reuse(own_data: tuple[Path, str]) -> None:
    with TestClient(create_app(own_data[0])) as c:
        assert reuses(c) == 0
        c.get(LOOKUP)
        assert reuses(c) == 1  # visible at once
        c.get("/v1/lookup?model=nobody&task=clinicalqa@0")  # not_evaluated
        c.get("/v1/lookup?model=medgemma-27b&task=nope")  # error
        c.get("/v1/lookup?model=gpt-oss-20b&task=clinicalqa@0")  # ambiguous
        c.head(LOOKUP)
        assert reuses(c) == 1
        tag = c.get(LOOKUP).headers["etag"]
        assert c.get(LOOKUP, headers={"If-None-Match": tag}).status_code == 304
        assert reuses(c) == 3  # a revalidated lookup still relied on the result
        download = c.get(PREDICTIONS)
        assert download.status_code == 200
        assert reuses(c) == 4
        c.head(PREDICTIONS)
        c.get("/artifacts/0123456789ab/predictions.parquet")
        assert reuses(c) == 4
        assert c.get(PREDICTIONS, headers={"If-None-Match": download.headers["etag"]}).status_code == 304
        assert reuses(c) == 5
        for path in ("/v1/results", f"/v1/results/{RUN}", "/v1/leaderboard?task=clinicalqa@0"):
            c.get(path)
        assert reuses(c) == 5


def test_reuses_survive_a_restart_and_stay_out_of_the_warehouse(own_data: tuple[Path, str]) -> None:
    root, _ = own_data
    before = warehouse_fingerprint(root)
    with TestClient(create_app(root)) as c:
        c.get(LOOKUP)
        c.get(LOOKUP)
        c.get(PREDICTIONS)
        assert reuses(c) == 3
    store = root / "state" / STORE_NAME
    assert stored(store) == 3  # flushed at shutdown
    with TestClient(create_app(root)) as c:
        assert reuses(c) == 3
        c.get(LOOKUP)
    with TestClient(create_app(root)) as c:
        assert reuses(c) == 4
    assert warehouse_fingerprint(root) == before
    assert not any("reuse" in p.name for p in (root / "warehouse").rglob("*"))
    assert {p.name for p in (root / "state").iterdir()} <= {STORE_NAME, f"{STORE_NAME}-wal", f"{STORE_NAME}-shm"}


def test_reuses_are_flushed_while_running(own_data: tuple[Path, str]) -> None:
    root, _ = own_data
    store = root / "state" / STORE_NAME
    with TestClient(create_app(root, reuse_flush_s=0.05)) as c:
        c.get(LOOKUP)
        c.get(LOOKUP)
        assert reuses(c) == 2
        deadline = time.monotonic() + 10  # generous: this waits for the background task, it does not time it
        while stored(store) != 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert stored(store) == 2  # written while the app is still running


def stored(store: Path) -> int | None:
    """The count in the SQLite store, read as another process would."""
    if not store.exists():
        return None
    with sqlite3.connect(store) as conn:
        row = conn.execute("SELECT n FROM reuses WHERE id = 1").fetchone()
    return row[0] if row else None


def test_counter_writes_only_changes_and_keeps_the_total(tmp_path: Path) -> None:
    path = tmp_path / "state" / STORE_NAME
    counter = ReuseCounter(path)
    assert counter.count == 0 and counter.flush() is False
    counter.add()
    counter.add(2)
    assert counter.count == 3  # visible before the flush
    assert counter.flush() is True and counter.flush() is False
    assert counter.count == 3 and stored(path) == 3
    other = ReuseCounter(path)  # another process on the same data directory
    other.add(4)
    other.flush()
    deadline = time.monotonic() + 5
    while counter.count != 7 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert counter.count == 7 and other.count == 7  # the shared total, within the read cache
    counter.close()
    other.close()
    assert ReuseCounter(path).count == 7


def test_the_json_count_is_moved_in_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "reuses.json").write_text(json.dumps({"reuses": 41, "updated_at": "2026-11-01T00:00:00Z"}))
    counter = ReuseCounter(state / STORE_NAME)
    assert counter.count == 41
    counter.add()
    counter.flush()
    counter.close()
    assert not (state / "reuses.json").exists() and (state / "reuses.json.migrated").exists()
    (state / "reuses.json").write_text(json.dumps({"reuses": 1000}))  # a stale copy put back later
    assert ReuseCounter(state / STORE_NAME).count == 42  # not added twice


@pytest.mark.parametrize("text", ["{not json", '{"reuses": -5}', '{"reuses": 2.5}', '{"reuses": "7"}', '{"reuses": true}', "[]"],
                         ids=["corrupt", "negative", "float", "string", "bool", "list"])
def test_a_bad_json_count_is_set_aside(tmp_path: Path, text: str) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "reuses.json").write_text(text)
    assert ReuseCounter(state / STORE_NAME).count == 0
    assert len(list(state.glob("reuses.json.unreadable-*"))) == 1 and not (state / "reuses.json").exists()


def _not_sqlite(path: Path) -> None:
    path.write_bytes(b"this is not an SQLite database" * 200)


def _directory(path: Path) -> None:
    path.mkdir()
    (path / "inside").write_text("x")


def _corrupt(path: Path) -> None:
    counter = ReuseCounter(path)
    counter.add(5)
    counter.flush()
    counter.close()
    raw = bytearray(path.read_bytes())
    raw[100:len(raw)] = b"\xff" * (len(raw) - 100)  # header kept, pages destroyed
    path.write_bytes(bytes(raw))


def _unreadable(path: Path) -> None:
    path.write_bytes(b"")
    os.chmod(path, 0)


@pytest.mark.parametrize("spoil", [_not_sqlite, _directory, _corrupt, _unreadable], ids=lambda f: f.__name__.strip("_"))
def test_a_bad_store_is_set_aside_and_a_fresh_one_starts(tmp_path: Path, spoil) -> None:
    state = tmp_path / "state"
    state.mkdir()
    path = state / STORE_NAME
    spoil(path)
    if spoil is _unreadable and os.access(path, os.R_OK):
        # root reads any file: an empty file is simply a new database; the point is that start-up works
        counter = ReuseCounter(path)
    else:
        counter = ReuseCounter(path)
        assert len(list(state.glob(f"{STORE_NAME}.unreadable-*"))) == 1
    assert counter.count == 0
    counter.add(2)
    assert counter.flush() is True
    counter.close()
    assert ReuseCounter(path).count == 2


def test_the_app_starts_on_a_bad_store(own_data: tuple[Path, str]) -> None:
    root, _ = own_data
    (root / "state").mkdir(exist_ok=True)
    _not_sqlite(root / "state" / STORE_NAME)
    with TestClient(create_app(root)) as c:
        assert reuses(c) == 0
        c.get(LOOKUP)
        assert reuses(c) == 1
    assert stored(root / "state" / STORE_NAME) == 1
