"""A new publish is served without a restart, and no response mixes two versions."""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

import duckdb
from litestar.testing import TestClient

from api.app import create_app
from api.tables import TableStore
from support.api_data import LATE_RUN, publish_fixture, run_id, signed_catalog
from medbench.layout import DataDir

LATER = dt.datetime(2026, 10, 30, 12, tzinfo=dt.timezone.utc)
LATE_ID = run_id(LATE_RUN[0])
BOARD = "/v1/leaderboard?task=clinicalqa@0"
LATE_LOOKUP = "/v1/lookup?model=hf/gpt-oss-20b&task=clinicalqa@0"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_store_swaps_when_the_pointer_moves_after_the_poll_interval(own_data: tuple[Path, str]) -> None:
    root, v1 = own_data
    clock = FakeClock()
    store = TableStore(DataDir(root), poll_s=0.25, clock=clock)
    old = store.current()
    assert old is not None and old.version == v1
    v2 = publish_fixture(root, with_late_run=True, now=LATER)
    assert v2 != v1
    assert store.current() is old  # not re-checked before the interval
    clock.now += 0.25
    new = store.current()
    assert new is not None and new.version == v2 and new is not old
    assert LATE_ID in new.results and LATE_ID not in old.results  # the old object is untouched
    assert len(old.leaderboards["clinicalqa@0"]) == 3 and len(new.leaderboards["clinicalqa@0"]) == 4
    clock.now += 1
    assert store.current() is new  # same pointer, no reload


def test_store_does_not_hold_the_database_open(own_data: tuple[Path, str]) -> None:
    root, v1 = own_data
    data = DataDir(root)
    assert TableStore(data).current() is not None
    # DuckDB refuses a read-write connection while this process holds a read-only one to the same file
    con = duckdb.connect(str(data.version_file(v1)))
    con.close()


def test_no_warehouse_then_a_first_publish(tmp_path: Path) -> None:
    root = tmp_path / "data"
    clock = FakeClock()
    store = TableStore(DataDir(root), clock=clock)
    assert store.current() is None and store.peek_version() is None
    version = publish_fixture(root)
    clock.now += 1
    assert store.current().version == version


def consistent(response, versions: dict[str, int]) -> str:
    """Check one leaderboard response against the version its header names; return that version."""
    version = response.headers["x-medbench-warehouse"]
    assert len(response.json()["rows"]) == versions[version], version
    return version


def test_republish_is_served_without_restart(own_data: tuple[Path, str]) -> None:
    root, v1 = own_data
    with TestClient(create_app(root)) as c:
        assert c.get(LATE_LOOKUP).json()["status"] == "not_evaluated"
        rows_by_version = {v1: 3}
        assert consistent(c.get(BOARD), rows_by_version) == v1
        v2 = publish_fixture(root, with_late_run=True, now=LATER)
        rows_by_version[v2] = 4
        seen = []
        deadline = time.monotonic() + 10  # generous upper bound; the swap itself happens within poll_s
        while time.monotonic() < deadline:
            seen.append(consistent(c.get(BOARD), rows_by_version))
            if seen[-1] == v2:
                break
            time.sleep(0.05)
        assert seen[-1] == v2
        assert set(seen) <= {v1, v2}
        stats = c.get("/v1/stats")
        assert stats.headers["x-medbench-warehouse"] == stats.json()["warehouse_version"] == v2
        lookup = c.get(LATE_LOOKUP)
        assert lookup.headers["x-medbench-warehouse"] == v2
        assert lookup.json()["result"]["run_id"] == LATE_ID
        assert c.get(f"/artifacts/{LATE_ID}/predictions.parquet").status_code == 200


def test_concurrent_requests_during_publishes_never_mix_versions(own_data: tuple[Path, str]) -> None:
    root, _ = own_data
    data = DataDir(root)
    # a version is named <time>-<content hash prefix>: know each content's row count before it is published
    rows_by_content = {signed_catalog(data, late)[0].content_hash()[:8]: rows for late, rows in ((False, 3), (True, 4))}
    errors: list[BaseException] = []
    stop = threading.Event()

    def check(response) -> None:
        version = response.headers["x-medbench-warehouse"]
        assert len(response.json()["rows"]) == rows_by_content[version.rsplit("-", 1)[1]], version

    with TestClient(create_app(root)) as c:

        def hammer() -> None:
            try:
                while not stop.is_set():
                    check(c.get(BOARD))
                    stats = c.get("/v1/stats")
                    assert stats.headers["x-medbench-warehouse"] == stats.json()["warehouse_version"]
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=hammer) for _ in range(3)]
        for t in threads:
            t.start()
        publish_fixture(root, with_late_run=True, now=LATER)
        v3 = publish_fixture(root, with_late_run=False, now=LATER + dt.timedelta(days=1))
        deadline = time.monotonic() + 10
        while c.get("/healthz").json()["warehouse_version"] != v3 and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        for t in threads:
            t.join()
        assert c.get("/healthz").json()["warehouse_version"] == v3
    assert not errors, errors[0]
