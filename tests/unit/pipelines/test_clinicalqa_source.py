"""The ClinicalQA loader: demo data, local files, validation, and the Hub path via a loopback hub."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.datasets.clinicalqa.demo import (
    DEMO_SOURCE,
    demo_clinicalqa_rows,
    write_demo_clinicalqa,
)
from pipelines.datasets.clinicalqa.source import (
    SCHEMA,
    ClinicalqaDataError,
    load_clinicalqa_snapshot,
    read_clinicalqa_snapshot,
)
from support.plugins import specs as load_specs
from support.paths import SAMPLES as SHARED_SAMPLES, REPO as REPO_ROOT

SAMPLE = SHARED_SAMPLES / "clinicalqa-sample.jsonl"
REPO_ID = "snuh/ClinicalQA"
PARQUET_NAME = "data/train-00000-of-00001.parquet"


@pytest.fixture(scope="module")
def spec():
    return load_specs().datasets["clinicalqa"]


def _quiet(_: str) -> None:
    pass


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- demo data


def test_demo_is_byte_identical_for_a_seed(tmp_path: Path) -> None:
    write_demo_clinicalqa(tmp_path / "a.jsonl", seed=11)
    write_demo_clinicalqa(tmp_path / "b.jsonl", seed=11)
    write_demo_clinicalqa(tmp_path / "c.jsonl", seed=12)
    a, b, c = ((tmp_path / f"{x}.jsonl").read_bytes() for x in "abc")
    assert a == b
    assert a != c


def test_demo_has_the_dataset_schema_and_balanced_answers(tmp_path: Path) -> None:
    path = tmp_path / "demo.jsonl"
    write_demo_clinicalqa(path)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    sample_row = json.loads(SAMPLE.read_text(encoding="utf-8").splitlines()[0])
    assert len(rows) == 1045
    assert all(list(r) == list(sample_row) for r in rows)
    assert all(list(r["options"]) == list(sample_row["options"]) for r in rows)
    assert len({r["question_id"] for r in rows}) == 1045
    answers = collections.Counter(r["answer"] for r in rows)
    assert set(answers) == set("ABCDE") and max(answers.values()) - min(answers.values()) <= 1
    assert {r["source"] for r in rows} == {DEMO_SOURCE}
    assert len({r["category"] for r in rows}) >= 10
    empty_exam = sum(1 for r in rows if not r["exam"])
    assert 0 < empty_exam < len(rows)
    assert len({r["question"] for r in rows}) > 900
    for r in rows:
        assert r["options"][f"option_{r['answer']}"] in r["explanation"]


def test_demo_loads_as_a_full_snapshot(tmp_path: Path, spec) -> None:
    path = tmp_path / "demo.jsonl"
    write_demo_clinicalqa(path)
    snap = load_clinicalqa_snapshot(spec, 1045, tmp_path / "snapshots", source=str(path), log=_quiet)
    assert snap.n_rows == 1045
    assert snap.path == tmp_path / "snapshots" / f"{snap.snapshot_id}.parquet"
    rows = read_clinicalqa_snapshot(snap.path)
    assert [r["question_id"] for r in rows] == list(range(1, 1046))


# --------------------------------------------------------------------------- local files


def test_sample_file_loads(tmp_path: Path, spec) -> None:
    snap = load_clinicalqa_snapshot(spec, 3, tmp_path, source=str(SAMPLE), log=_quiet)
    assert snap.n_rows == 3
    assert len(snap.snapshot_id) == 16 and int(snap.snapshot_id, 16) >= 0
    rows = read_clinicalqa_snapshot(snap.path)
    assert rows[1]["exam"] == ""
    assert rows[0]["options"]["option_B"] == "심전도"
    assert pq.read_schema(snap.path).equals(SCHEMA, check_metadata=False)


def test_jsonl_and_parquet_give_the_same_snapshot_id(tmp_path: Path, spec) -> None:
    rows = demo_clinicalqa_rows(seed=5, n=60)
    jsonl = _write_jsonl(tmp_path / "rows.jsonl", rows)
    parquet = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(list(reversed(rows)), schema=SCHEMA), parquet)  # other order
    a = load_clinicalqa_snapshot(spec, 60, tmp_path / "a", source=str(jsonl), log=_quiet)
    b = load_clinicalqa_snapshot(spec, 60, tmp_path / "b", source=str(parquet), log=_quiet)
    assert a.snapshot_id == b.snapshot_id
    assert read_clinicalqa_snapshot(a.path) == read_clinicalqa_snapshot(b.path)


def test_changed_content_changes_the_snapshot_id(tmp_path: Path, spec) -> None:
    rows = demo_clinicalqa_rows(seed=5, n=20)
    a = load_clinicalqa_snapshot(spec, 20, tmp_path, source=str(_write_jsonl(tmp_path / "a.jsonl", rows)), log=_quiet)
    rows[7] = {**rows[7], "explanation": rows[7]["explanation"] + " "}
    b = load_clinicalqa_snapshot(spec, 20, tmp_path, source=str(_write_jsonl(tmp_path / "b.jsonl", rows)), log=_quiet)
    assert a.snapshot_id != b.snapshot_id


def test_repository_folder_layout_is_read(tmp_path: Path, spec) -> None:
    rows = demo_clinicalqa_rows(seed=5, n=30)
    (tmp_path / "mirror" / "data").mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(rows[:10], schema=SCHEMA), tmp_path / "mirror/data/train-00000-of-00002.parquet"
    )
    pq.write_table(
        pa.Table.from_pylist(rows[10:], schema=SCHEMA), tmp_path / "mirror/data/train-00001-of-00002.parquet"
    )
    folder = load_clinicalqa_snapshot(spec, 30, tmp_path / "s", source=str(tmp_path / "mirror"), log=_quiet)
    single = load_clinicalqa_snapshot(
        spec, 30, tmp_path / "s", source=str(_write_jsonl(tmp_path / "r.jsonl", rows)), log=_quiet
    )
    assert folder.snapshot_id == single.snapshot_id


def test_unsupported_or_missing_source_file(tmp_path: Path, spec) -> None:
    (tmp_path / "rows.csv").write_text("question_id\n1\n")
    with pytest.raises(ClinicalqaDataError, match=r"unsupported file type '\.csv'"):
        load_clinicalqa_snapshot(spec, 1, tmp_path, source=str(tmp_path / "rows.csv"), log=_quiet)
    with pytest.raises(ClinicalqaDataError, match="no such file"):
        load_clinicalqa_snapshot(spec, 1, tmp_path, source=str(tmp_path / "nope.jsonl"), log=_quiet)


# --------------------------------------------------------------------------- validation


def _broken_rows() -> list[dict]:
    rows = demo_clinicalqa_rows(seed=3, n=8)
    rows[1]["answer"] = "F"
    rows[2]["question_id"] = rows[0]["question_id"]
    rows[3]["options"] = {**rows[3]["options"], "option_C": "  "}
    del rows[4]["options"]["option_E"]
    rows[5]["question"] = ""
    rows[6]["question_id"] = "7"
    return rows


def test_validation_errors_name_row_and_field(tmp_path: Path, spec) -> None:
    source = _write_jsonl(tmp_path / "broken.jsonl", _broken_rows())
    with pytest.raises(ClinicalqaDataError) as info:
        load_clinicalqa_snapshot(spec, 8, tmp_path / "out", source=str(source), log=_quiet)
    message = str(info.value)
    assert "row 2 (question_id 2): field `answer` is 'F', expected one of A, B, C, D, E" in message
    assert "row 3 (question_id 1): duplicate question_id, first seen at row 1" in message
    assert "row 4 (question_id 4): field `options.option_C` is empty" in message
    assert "row 5 (question_id 5): field `options.option_E` is missing" in message
    assert "row 6 (question_id 6): field `question` is empty" in message
    assert "row 7: field `question_id` must be an integer, got '7'" in message
    assert "expected 8 rows" not in message
    assert not (tmp_path / "out").exists()


def test_row_count_must_match_the_spec(tmp_path: Path, spec) -> None:
    with pytest.raises(ClinicalqaDataError, match=r"expected 1045 rows \(the task spec's n_items\), found 3"):
        load_clinicalqa_snapshot(spec, 1045, tmp_path, source=str(SAMPLE), log=_quiet)


def test_parquet_rows_are_validated_too(tmp_path: Path, spec) -> None:
    rows = demo_clinicalqa_rows(seed=3, n=4)
    rows[3]["answer"] = "a"
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
    with pytest.raises(ClinicalqaDataError, match=r"row 4 \(question_id 4\): field `answer` is 'a'"):
        load_clinicalqa_snapshot(spec, 4, tmp_path / "out", source=str(path), log=_quiet)


def test_bad_json_names_the_line(tmp_path: Path, spec) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(demo_clinicalqa_rows(n=1)[0], ensure_ascii=False) + "\n{broken\n", encoding="utf-8")
    with pytest.raises(ClinicalqaDataError, match=r"rows\.jsonl line 2: not valid JSON"):
        load_clinicalqa_snapshot(spec, 2, tmp_path, source=str(path), log=_quiet)


# --------------------------------------------------------------------------- the Hub


class _Hub:
    """A loopback stand-in for the Hugging Face Hub serving one dataset parquet at one revision.

    It implements just the routes huggingface_hub 2.4 calls for list_repo_files + hf_hub_download:
    GET /api/datasets/{repo}/tree/{rev}, HEAD and GET /datasets/{repo}/resolve/{rev}/{file}.
    The first GET of the file is answered 503 (huggingface_hub does not retry that one itself).
    """

    def __init__(self, payload: bytes, revision: str):
        self.payload = payload
        self.revision = revision
        self.commit = hashlib.sha1(payload).hexdigest()
        self.requests: list[tuple[str, str, int]] = []
        self._failed_once = False
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                hub._handle(self, body=True)

            def do_HEAD(self) -> None:
                hub._handle(self, body=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _reply(
        self, handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str], send: bool
    ) -> None:
        """Answer with ``body``'s length; a HEAD request (``send`` false) gets the headers only."""
        self.requests.append((handler.command, unquote(urlparse(handler.path).path), status))
        handler.send_response(status)
        for key, value in {**headers, "Content-Length": str(len(body))}.items():
            handler.send_header(key, value)
        handler.end_headers()
        if send:
            handler.wfile.write(body)

    def _handle(self, handler: BaseHTTPRequestHandler, body: bool) -> None:
        path = unquote(urlparse(handler.path).path)
        tree = f"/api/datasets/{REPO_ID}/tree/{self.revision}"
        resolve = f"/datasets/{REPO_ID}/resolve/{self.revision}/{PARQUET_NAME}"
        if path == tree and handler.command == "GET":
            listing = [
                {"type": "file", "oid": "1" * 40, "size": 12, "path": ".gitattributes"},
                {"type": "file", "oid": "2" * 40, "size": 40, "path": "README.md"},
                {"type": "directory", "oid": "3" * 40, "size": 0, "path": "data"},
                {"type": "file", "oid": "4" * 40, "size": len(self.payload), "path": PARQUET_NAME},
            ]
            self._reply(handler, 200, json.dumps(listing).encode(), {"Content-Type": "application/json"}, body)
        elif path == resolve:
            if handler.command == "GET" and not self._failed_once:
                self._failed_once = True
                self._reply(handler, 503, b"busy", {"Content-Type": "text/plain"}, body)
                return
            headers = {
                "X-Repo-Commit": self.commit,
                "ETag": f'"{hashlib.sha256(self.payload).hexdigest()}"',
                "Content-Type": "application/octet-stream",
            }
            self._reply(handler, 200, self.payload, headers, body)
        else:
            self._reply(handler, 404, b'{"error": "not found"}', {"Content-Type": "application/json"}, body)


@pytest.fixture()
def hub_rows() -> list[dict]:
    return demo_clinicalqa_rows(seed=21, n=40)


@pytest.fixture()
def hub(hub_rows: list[dict], spec) -> Iterator[_Hub]:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(hub_rows, schema=SCHEMA), sink)
    server = _Hub(sink.getvalue().to_pybytes(), spec.source.revision)
    yield server
    server.close()


_DOWNLOAD_SCRIPT = """
import json, os, sys
from pathlib import Path
import msgspec
import huggingface_hub  # imported before HF_ENDPOINT names the hub: the loader must read it at call time
from pipelines.datasets.clinicalqa.source import ClinicalqaDownloadError, load_clinicalqa_snapshot
from medbench.registry import installed_plugins
from pipelines.engine.specs import load_specs
hub_url, rows, out_dir, cache_dir, revision = sys.argv[1:6]
os.environ["HF_ENDPOINT"] = hub_url
spec = load_specs(None, installed_plugins()).datasets["clinicalqa"]
spec = msgspec.structs.replace(spec, source=msgspec.structs.replace(spec.source, revision=revision))
try:
    snap = load_clinicalqa_snapshot(spec, int(rows), Path(out_dir), cache_dir=Path(cache_dir),
                                    log=lambda line: print(line, file=sys.stderr))
except ClinicalqaDownloadError as exc:
    print(json.dumps({"error": str(exc)}))
else:
    print(json.dumps({"snapshot_id": snap.snapshot_id, "path": str(snap.path), "n_rows": snap.n_rows}))
"""


def _download_in_a_fresh_process(tmp_path: Path, hub: _Hub, revision: str) -> tuple[dict, str]:
    """Run the loader where huggingface_hub reads its environment at import, as a user's process does."""
    env = {
        **os.environ,
        "HF_ENDPOINT": "http://127.0.0.1:9",  # nothing listens there; replaced after the import
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HOME": str(tmp_path / "hf_home"),
        "PYTHONPATH": str(REPO_ROOT),
    }
    env.pop("HF_TOKEN", None)
    args = [hub.url, "40", str(tmp_path / "snapshots"), str(tmp_path / "cache"), revision]
    result = subprocess.run(
        [sys.executable, "-c", _DOWNLOAD_SCRIPT, *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def test_download_through_huggingface_hub(tmp_path: Path, hub: _Hub, hub_rows: list[dict], spec) -> None:
    got, stderr = _download_in_a_fresh_process(tmp_path, hub, spec.source.revision)
    local = load_clinicalqa_snapshot(
        spec, 40, tmp_path / "local", source=str(_write_jsonl(tmp_path / "rows.jsonl", hub_rows)), log=_quiet
    )
    assert got["snapshot_id"] == local.snapshot_id
    assert got["n_rows"] == 40
    assert read_clinicalqa_snapshot(Path(got["path"])) == read_clinicalqa_snapshot(local.path)

    resolve = f"/datasets/{REPO_ID}/resolve/{spec.source.revision}/{PARQUET_NAME}"
    assert ("GET", f"/api/datasets/{REPO_ID}/tree/{spec.source.revision}", 200) in hub.requests
    downloads = [status for method, path, status in hub.requests if method == "GET" and path == resolve]
    assert downloads == [503, 200]
    assert "retry" in stderr
    cached = list((tmp_path / "cache").rglob("train-00000-of-00001.parquet"))
    assert cached, "the download lands in cache_dir"

    # A commit-pinned revision is not fetched again for the same data directory.
    hub.requests.clear()
    again = load_clinicalqa_snapshot(spec, 40, tmp_path / "snapshots", log=_quiet)
    assert again.snapshot_id == got["snapshot_id"]
    assert hub.requests == []


def test_unknown_revision_says_how_to_use_a_local_copy(tmp_path: Path, hub: _Hub) -> None:
    got, _ = _download_in_a_fresh_process(tmp_path, hub, "deadbee")
    assert "could not fetch snuh/ClinicalQA@deadbee" in got["error"]
    assert "MEDBENCH_CLINICALQA_SOURCE" in got["error"]
    assert [p for _, p, _ in hub.requests] == [f"/api/datasets/{REPO_ID}/tree/deadbee"]
