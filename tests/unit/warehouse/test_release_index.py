"""The release history is read through an on-disk index of the log (``warehouse.release_index``).

Every release of a log of deltas (with the publisher's snapshots) is found through the index, and its
full manifest is the one rebuilt from the whole log read into memory (how releases were answered
before the index); a page of the listing is the log's newest records; lines appended after the index
was written (a publish killed before updating it), a torn last line, and a missing or damaged index
are all read right; a lookup reads O(log n) index entries.
"""

from __future__ import annotations

import datetime as dt
import math
import os

import pytest

from warehouse import release_index
from medbench.layout import DataDir
from warehouse.release_deltas import SNAPSHOT_EVERY, full_manifest, write_snapshot
from warehouse.releases import (
    append_release,
    find_release,
    make_record,
    manifest_of,
    newest_releases,
    read_releases,
    release_count,
)

UTC = dt.UTC
N = 150


def _manifest(k: int) -> dict:
    entries = [{"run_id": f"{i:012x}", "task": "t@0", "model": f"p/m-{i}", "predictions_sha256": "0" * 64,
                "status": "withdrawn" if (i + k) % 7 == 0 else "current", "superseded_by": None}
               for i in range(5 + k % 11)]
    return {"format": 1, "release": "", "demo": False, "code_revision": f"rev-{k}", "results": entries,
            "specs": {"tasks": {"t@0": "0" * 64}, "models": {}}, "leaderboards": {"t@0": [{"rank": 1, "k": k}]}}


def _log(data: DataDir, n: int = N, indexed_up_to: int | None = None) -> None:
    before = None
    when = dt.datetime(2026, 12, 1, tzinfo=UTC)
    # ids not in time order now and then (a clock set back): the index sorts them itself
    for k in range(n):
        stamp = when + dt.timedelta(seconds=k if k % 13 else -k)
        manifest = dict(_manifest(k), release=stamp.strftime("%Y%m%dT%H%M%S%fZ") + f"-{k:08x}")
        record = make_record(manifest, stamp, before[0].id if before else None,
                             before=before if before else None)
        append_release(data, record, index=indexed_up_to is None or k < indexed_up_to)
        if (k + 1) % SNAPSHOT_EVERY == 0:
            write_snapshot(data, record.id, manifest)
        before = (record, manifest)


def _in_memory_manifests(data: DataDir) -> dict[str, dict]:
    records = read_releases(data)
    return {r.id: full_manifest(data, records[:i + 1]) for i, r in enumerate(records)}


@pytest.mark.parametrize("indexed_up_to", [None, N - 3, 0])
def test_every_release_is_found_and_answers_as_before(tmp_path, indexed_up_to) -> None:
    data = DataDir(tmp_path)
    _log(data, indexed_up_to=indexed_up_to)
    expected = _in_memory_manifests(data)
    records = read_releases(data)
    assert release_count(data) == len(records) == N
    for record in records:
        found = find_release(data, record.id)
        assert found == record
        assert manifest_of(data, found) == expected[record.id]
    assert find_release(data, "20991231T000000000000Z-00000000") is None
    assert newest_releases(data, 10) == list(records[::-1][:10])
    assert newest_releases(data, 10, offset=N - 4) == list(records[::-1][N - 4:])


def test_a_torn_last_line_and_a_damaged_index_are_read_right(tmp_path) -> None:
    data = DataDir(tmp_path)
    _log(data, n=20)
    records = read_releases(data)
    with open(data.release_log, "ab") as fh:
        fh.write(b'{"id": "20261201T0000')  # a publish killed mid-write
    assert release_count(data) == 20 and find_release(data, records[-1].id) == records[-1]
    release_index.index_path(data).write_bytes(b"not an index")
    assert [find_release(data, r.id) for r in records] == list(records)
    release_index.index_path(data).unlink()
    assert newest_releases(data, 3) == list(records[::-1][:3])
    release_index.write_index(data)  # the next publish rebuilds it
    assert release_index.open_history(data).fallback is None


def test_a_lookup_reads_log_n_index_entries(tmp_path, monkeypatch) -> None:
    data = DataDir(tmp_path)
    _log(data, n=N)
    history = release_index.open_history(data)
    reads = []
    real = os.pread
    monkeypatch.setattr(release_index.os, "pread", lambda fd, n, at: reads.append(n) or real(fd, n, at))
    try:
        for record in read_releases(data)[::17]:
            reads.clear()
            assert history.position_of(record.id) is not None
            assert len(reads) <= math.ceil(math.log2(N)) + 1
    finally:
        history.close()
