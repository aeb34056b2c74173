"""A published result's predictions file that is gone, or changed in place behind the server's back.

Issue #22. Before the fix: a deleted file answered ``404 run_not_found`` (the run exists: the
server lost its file, and a client or a cache took "no such run" for an answer), and a file
rewritten in place with the same size and its mtime put back by ``os.utime`` was served 200 under
the published ETag, because its sha256 check was cached on (inode, size, mtime) only.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from litestar.testing import TestClient
from support.api_data import RUN_IDS, publish_fixture

from api.app import create_app
from api.routes import artifacts
from api.service import service_of
from medbench.layout import DataDir

RUN = RUN_IDS["medgemma-cqa0"]
URL = f"/artifacts/{RUN}/predictions.parquet"


def test_a_missing_predictions_file_is_unavailable_not_an_unknown_run(tmp_path: Path) -> None:
    root = tmp_path / "data"
    publish_fixture(root)
    DataDir(root).predictions_path(RUN).unlink()
    app = create_app(root)
    reuses = service_of(app).reuses
    with TestClient(app) as client:
        assert client.get(f"/v1/results/{RUN}").status_code == 200  # the result is still published
        for response in (client.get(URL), client.head(URL)):
            assert response.status_code == 503, (response.status_code, response.text)
            assert response.headers["content-type"].startswith("application/json")
            assert "etag" not in response.headers or response.headers["etag"] != f'"{RUN}"'
        body = client.get(URL).json()
        assert set(body) == {"error", "message"} and body["error"] == "artifact_unavailable", body
        message = body["message"]
        assert "missing" in message and "re-materialize" in message and "medbench materialize" in message, message
        assert str(root) not in message  # no server path
        assert reuses.count == 0


@pytest.mark.parametrize("left_alone", [True, False], ids=["hash-cached", "just-written"])
def test_a_file_changed_in_place_with_its_mtime_put_back_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     left_alone: bool) -> None:
    """Both paths of the check: a file left alone long enough has its sha256 cached (here at once), a
    file changed within the last ``RACY_NS`` (all files of a fresh publish) is hashed at each request."""
    root = tmp_path / "data"
    publish_fixture(root)
    path = DataDir(root).predictions_path(RUN)
    good = path.read_bytes()
    if left_alone:
        monkeypatch.setattr(artifacts, "RACY_NS", 0)
    app = create_app(root)
    with TestClient(app) as client:
        ok = client.get(URL)
        assert ok.status_code == 200 and ok.content == good
        before = os.stat(path)
        tampered = bytearray(good)
        tampered[len(good) // 2] ^= 0xFF
        with open(path, "r+b") as fh:  # in place: same inode, same size
            fh.write(tampered)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = os.stat(path)
        assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
        response = client.get(URL)
        assert response.status_code == 503, (response.status_code, response.headers.get("etag"))
        body = response.json()
        assert body["error"] == "artifact_unavailable" and "not the one published" in body["message"], body
        path.write_bytes(good)  # restored: served again
        assert client.get(URL).content == good
