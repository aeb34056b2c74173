"""The VitalDB loader: local folders, a flaky loopback HTTP API, corrupt files, resumability."""

from __future__ import annotations

import gzip
import shutil
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipelines.datasets.vitaldb.demo import write_demo_vitaldb
from pipelines.datasets.vitaldb.source import (
    VitaldbSourceError,
    load_vitaldb_snapshot,
    open_vitaldb_snapshot,
    read_snapshot_info,
)
from support.paths import SAMPLES as SHARED_SAMPLES

TRACK = "Solar8000/ART_MBP"
SAMPLES = SHARED_SAMPLES / "vitaldb-mirror"
QUIET = {"log": lambda _: None}
FAST_RETRY = {"backoff_s": 0.001, "max_backoff_s": 0.01}


def _lines(path: Path) -> list[str]:
    return gzip.decompress(path.read_bytes()).decode().strip().splitlines()


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("vitaldb") / "api"
    write_demo_vitaldb(folder)
    return folder


@pytest.fixture(scope="module")
def folder_snapshot(demo_folder: Path, tmp_path_factory):
    root = tmp_path_factory.mktemp("folder-load")
    return load_vitaldb_snapshot(str(demo_folder), root / "snap", root / "cache", **QUIET)


def _art_tracks(folder: Path) -> pl.DataFrame:
    return pl.read_csv(gzip.decompress((folder / "trks").read_bytes())).filter(pl.col("tname") == TRACK)


# --------------------------------------------------------------------------- local folders


def test_shared_sample_folder(tmp_path: Path):
    snap = load_vitaldb_snapshot(str(SAMPLES), tmp_path / "snap", tmp_path / "cache", **QUIET)
    tables = open_vitaldb_snapshot(snap.dir)
    assert snap.n_cases == 2 and snap.n_track_cases == 2
    trks = pl.read_csv(gzip.decompress((SAMPLES / "trks").read_bytes()))
    art = trks.filter(pl.col("tname") == TRACK)
    expected = sum(len(_lines(SAMPLES / tid)) - 1 for tid in art["tid"])
    assert snap.n_readings == tables.readings.height == expected
    # case 2 also has EV1000/ART_MBP (constant 140 every 20 s): none of it is read
    case2 = tables.readings.filter(pl.col("caseid") == 2)
    ev_tid = trks.filter((pl.col("caseid") == 2) & (pl.col("tname") == "EV1000/ART_MBP"))["tid"][0]
    assert case2.height == len(_lines(SAMPLES / art.filter(pl.col("caseid") == 2)["tid"][0])) - 1
    assert case2.height != len(_lines(SAMPLES / ev_tid)) - 1
    assert tables.cases.columns == _lines(SAMPLES / "cases")[0].split(",")
    assert tables.tracks.height == trks.height
    assert tables.readings.schema == pl.Schema({"caseid": pl.Int32, "time": pl.Float64, "value": pl.Float32})
    assert read_snapshot_info(snap.dir) == snap


def test_demo_folder_snapshot(folder_snapshot, demo_folder: Path):
    tables = open_vitaldb_snapshot(folder_snapshot.dir)
    art = _art_tracks(demo_folder)
    assert folder_snapshot.n_cases == 80
    assert set(tables.readings["caseid"].unique().to_list()) == set(art["caseid"].to_list())
    r = tables.readings
    key = r["caseid"].cast(pl.Float64) * 1e6 + r["time"]
    assert bool((key.diff().drop_nulls() >= 0).all())  # sorted by caseid, time
    assert len(folder_snapshot.snapshot_id) == 16 and folder_snapshot.dir.name == folder_snapshot.snapshot_id


def test_same_content_same_id_and_different_content_different_id(folder_snapshot, demo_folder: Path, tmp_path: Path):
    copy = tmp_path / "copy"
    shutil.copytree(demo_folder, copy)
    again = load_vitaldb_snapshot(str(copy), tmp_path / "snap", tmp_path / "cache", **QUIET)
    assert again.snapshot_id == folder_snapshot.snapshot_id
    tid = _art_tracks(copy)["tid"][0]
    lines = _lines(copy / tid)
    lines[5] = lines[5].split(",")[0] + ",99.9"
    (copy / tid).write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    changed = load_vitaldb_snapshot(str(copy), tmp_path / "snap2", tmp_path / "cache", **QUIET)
    assert changed.snapshot_id != folder_snapshot.snapshot_id


@pytest.mark.parametrize("damage", ["truncate", "garble", "header"])
def test_corrupt_file_in_a_folder_names_case_and_track(demo_folder: Path, tmp_path: Path, damage: str):
    copy = tmp_path / "copy"
    shutil.copytree(demo_folder, copy)
    row = _art_tracks(copy).row(3, named=True)
    path = copy / row["tid"]
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garble":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes(b ^ 0x5A for b in data[middle : middle + 64]) + data[middle + 64 :])
    else:
        text = gzip.decompress(data).replace(TRACK.encode(), b"Solar8000/HR", 1)
        path.write_bytes(gzip.compress(text, mtime=0))
    with pytest.raises(VitaldbSourceError) as err:
        load_vitaldb_snapshot(str(copy), tmp_path / "snap", tmp_path / "cache", **QUIET)
    assert f"case {row['caseid']}" in str(err.value) and TRACK in str(err.value)


def test_missing_folder_is_an_error(tmp_path: Path):
    with pytest.raises(VitaldbSourceError):
        load_vitaldb_snapshot(str(tmp_path / "nowhere"), tmp_path / "snap", tmp_path / "cache", **QUIET)


# --------------------------------------------------------------------------- a flaky loopback API


class FlakyApi:
    """Serves a folder like the VitalDB API, misbehaving on request as planned per endpoint.

    Actions for successive requests of one name: "429", "503", "cut" (announces the full length,
    sends half, drops the connection), "short" (a complete response whose body is half the gzip),
    then "ok" once the plan runs out.
    """

    def __init__(self, folder: Path):
        self.folder = folder
        self.plan: dict[str, list[str]] = {}
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                return None

            def do_GET(self) -> None:
                name = self.path.strip("/")
                with api._lock:
                    n = api.requests[name]
                    api.requests[name] += 1
                    steps = api.plan.get(name, [])
                    action = steps[n] if n < len(steps) else "ok"
                if action in ("429", "503"):
                    self.send_response(int(action))
                    self.send_header("Retry-After", "0")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path = api.folder / name
                if not path.is_file():
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = path.read_bytes()
                body = data[: len(data) // 2] if action in ("cut", "short") else data
                self.send_response(200)
                self.send_header("Content-Type", "text/csv")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(data) if action == "cut" else len(body)))
                self.end_headers()
                self.wfile.write(body)
                if action == "cut":
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FlakyApi:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def total(self) -> int:
        return sum(self.requests.values())


def test_http_with_429_503_and_a_cut_file_equals_the_folder(folder_snapshot, demo_folder: Path, tmp_path: Path):
    tids = _art_tracks(demo_folder)["tid"].to_list()
    with FlakyApi(demo_folder) as api:
        api.plan = {
            "cases": ["429"],
            "trks": ["503", "503"],
            tids[0]: ["cut"],
            tids[1]: ["short"],
            tids[2]: ["503", "429", "cut"],
        }
        snap = load_vitaldb_snapshot(
            api.url, tmp_path / "snap", tmp_path / "cache", max_workers=4, **FAST_RETRY, **QUIET
        )
        assert snap.snapshot_id == folder_snapshot.snapshot_id
        assert snap.n_readings == folder_snapshot.n_readings
        files = 2 + len(tids)
        assert api.total == files + 1 + 2 + 1 + 1 + 3
        # resumable: everything is cached now, a second load downloads nothing
        before = api.total
        again = load_vitaldb_snapshot(api.url, tmp_path / "snap", tmp_path / "cache", max_workers=4, **QUIET)
        assert again.snapshot_id == snap.snapshot_id and api.total == before
    assert not list((tmp_path / "cache").rglob("*.part"))


def test_http_error_after_retries_names_case_and_track_then_resumes(demo_folder: Path, tmp_path: Path):
    art = _art_tracks(demo_folder)
    broken = art.row(5, named=True)
    with FlakyApi(demo_folder) as api:
        api.plan = {broken["tid"]: ["503"] * 3}
        with pytest.raises(VitaldbSourceError) as err:
            load_vitaldb_snapshot(
                api.url, tmp_path / "snap", tmp_path / "cache", max_workers=2, retries=2, **FAST_RETRY, **QUIET
            )
        message = str(err.value)
        assert f"case {broken['caseid']}" in message and TRACK in message and "HTTP 503" in message
        assert api.requests[broken["tid"]] == 3
        cached = {p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()}
        assert "cases" in cached and broken["tid"] not in cached
        before = api.total
        snap = load_vitaldb_snapshot(api.url, tmp_path / "snap", tmp_path / "cache", max_workers=2, **QUIET)
        wanted = {"cases", "trks", *art["tid"].to_list()}
        assert api.total - before == len(wanted - cached)  # only what was missing
        assert api.requests[broken["tid"]] == 4
    assert snap.n_track_cases == art["caseid"].n_unique()


def test_http_truncated_every_time_is_an_error(demo_folder: Path, tmp_path: Path):
    row = _art_tracks(demo_folder).row(0, named=True)
    with FlakyApi(demo_folder) as api:
        api.plan = {row["tid"]: ["short"] * 10}
        with pytest.raises(VitaldbSourceError) as err:
            load_vitaldb_snapshot(api.url, tmp_path / "snap", tmp_path / "cache", retries=1, **FAST_RETRY, **QUIET)
    assert f"case {row['caseid']}" in str(err.value) and "gzip" in str(err.value)


def test_http_not_found_is_not_retried(demo_folder: Path, tmp_path: Path):
    folder = tmp_path / "api"
    shutil.copytree(demo_folder, folder)
    row = _art_tracks(folder).row(2, named=True)
    (folder / row["tid"]).unlink()
    with FlakyApi(folder) as api:
        with pytest.raises(VitaldbSourceError, match="HTTP 404") as err:
            load_vitaldb_snapshot(api.url, tmp_path / "snap", tmp_path / "cache", **FAST_RETRY, **QUIET)
        assert api.requests[row["tid"]] == 1
    assert f"case {row['caseid']}" in str(err.value)


def test_readings_are_exactly_the_track_values(folder_snapshot, demo_folder: Path):
    tables = open_vitaldb_snapshot(folder_snapshot.dir)
    row = _art_tracks(demo_folder).row(1, named=True)
    lines = _lines(demo_folder / row["tid"])[1:]
    times = np.array([float(line.split(",")[0]) for line in lines])
    values = np.array([float(line.split(",")[1]) for line in lines], dtype=np.float32)
    mine = tables.readings.filter(pl.col("caseid") == row["caseid"])
    np.testing.assert_array_equal(mine["time"].to_numpy(), times)
    np.testing.assert_array_equal(mine["value"].to_numpy(), values)
