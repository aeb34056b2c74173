"""After ``--force`` reran a result and its publish failed, the next plain run republishes (issue #22, 6g).

``--force`` rewrites ``result.json`` under the same run id (a new ``created_at``, new usage); when the
publish after it fails, the warehouse keeps the older record. Before the fix the next plain
``medbench materialize`` published only when a reused run id was *absent* from the warehouse, so it
reused everything, published nothing, and the API kept serving a record that differs from
result.json for good. The publish failure is injected from outside, as a user could meet it: a
directory in the place of ``warehouse/.publish.lock`` (the lock cannot be opened; this also fails
for root, unlike a read-only folder).
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from litestar.testing import TestClient

from api.app import create_app
from support.commands import run_medbench
from medbench.layout import DataDir
from warehouse.read import result_by_id
from medbench.records import decode_record
from medbench.tempfiles import LOCK_NAME
from warehouse.versions import kept_versions, read_pointer

pytestmark = pytest.mark.slow

SELECTION = ("--demo", "--task", "clinicalqa@0", "--model", "medbench/random")


def test_a_plain_run_republishes_what_a_failed_publish_after_force_left_behind(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    run_medbench("materialize", *SELECTION, data=data.root)
    before = read_pointer(data)
    (run_dir,) = data.artifacts.iterdir()
    run_id = run_dir.name

    lock = data.warehouse / LOCK_NAME
    lock.unlink()
    lock.mkdir()  # the publish cannot take its lock
    forced = run_medbench("materialize", *SELECTION, "--force", data=data.root, check=False)
    assert forced.returncode == 1 and "publish failed" in forced.stdout, forced.stdout + forced.stderr
    lock.rmdir()
    # the record as published: result.json less generation_key, which is kept for the pipeline and
    # published nowhere (warehouse.signing.NOT_PUBLISHED)
    stored = msgspec.structs.replace(decode_record(data.result_path(run_id).read_bytes()), generation_key=None)
    assert read_pointer(data) == before
    assert result_by_id(data, run_id).record != stored  # the precondition: the warehouse is behind

    proc = run_medbench("materialize", *SELECTION, data=data.root)

    assert f"{run_id}" in proc.stdout and " reused " in proc.stdout, proc.stdout
    after = read_pointer(data)
    assert after != before and after in kept_versions(data), proc.stdout
    assert f"published warehouse {after}:" in proc.stdout
    assert result_by_id(data, run_id).record == stored
    with TestClient(create_app(data.root)) as client:
        served = client.get(f"/v1/results/{run_id}")
    assert served.status_code == 200 and served.headers["x-medbench-warehouse"] == after
    on_disk = json.loads(data.result_path(run_id).read_bytes())
    assert served.json()["usage"] == on_disk["usage"]  # the rerun's, as result.json holds it

    again = run_medbench("materialize", *SELECTION, data=data.root)  # now in step: nothing to publish
    assert read_pointer(data) == after and f"published warehouse {after}:" in again.stdout
