"""Reuses: what counts, visible at once, flushed while running and at shutdown, kept across restarts,
and never written into the warehouse."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from litestar.testing import TestClient

from api.app import create_app
from api.reuse import ReuseCounter
from api_fixtures import RUN_IDS, own_data  # noqa: F401  (fixture)

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
    store = root / "state" / "reuses.json"
    assert json.loads(store.read_text())["reuses"] == 3  # flushed at shutdown
    with TestClient(create_app(root)) as c:
        assert reuses(c) == 3
        c.get(LOOKUP)
    with TestClient(create_app(root)) as c:
        assert reuses(c) == 4
    assert warehouse_fingerprint(root) == before
    assert not any("reuse" in p.name for p in (root / "warehouse").rglob("*"))
    assert [p.name for p in (root / "state").iterdir()] == ["reuses.json"]  # no temporary files left


def test_reuses_are_flushed_while_running(own_data: tuple[Path, str]) -> None:
    root, _ = own_data
    store = root / "state" / "reuses.json"
    with TestClient(create_app(root, reuse_flush_s=0.05)) as c:
        c.get(LOOKUP)
        c.get(LOOKUP)
        assert reuses(c) == 2
        deadline = time.monotonic() + 10  # generous: this waits for the background task, it does not time it
        while stored(store) != 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert stored(store) == 2  # written while the app is still running


def stored(store: Path) -> int | None:
    return json.loads(store.read_text())["reuses"] if store.exists() else None


def test_counter_writes_only_changes_and_sets_aside_an_unreadable_store(tmp_path: Path) -> None:
    path = tmp_path / "state" / "reuses.json"
    counter = ReuseCounter(path)
    assert counter.count == 0 and counter.flush() is False and not path.exists()
    counter.add()
    counter.add(2)
    assert counter.flush() is True and counter.flush() is False
    assert ReuseCounter(path).count == 3
    path.write_text("{not json")
    assert ReuseCounter(path).count == 0
    assert len(list(path.parent.glob("reuses.json.unreadable-*"))) == 1
