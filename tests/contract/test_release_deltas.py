"""Releases as deltas (docs/concepts.md, "Releases"): every release answers as before the upgrade.

A data directory is published three times as an earlier medbench did (each record a full manifest),
and every release's answers are kept; then it is published three more times (a new result, one
that supersedes another, a withdrawal), each record now a delta. Every earlier release answers
byte for byte as before, and every new release answers as it would had it been kept whole (a twin
directory published with full manifests throughout).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import msgspec
from litestar.testing import TestClient
from support.api_data import RUN_IDS, UTC, catalog, make_record, run_id

from api.app import create_app
from warehouse import publish as publishing
from medbench.layout import DataDir
from medbench.records import encode_record
from warehouse.release_deltas import (
    DELTA_FORMAT,
    SNAPSHOT_EVERY,
    apply_deltas,
    snapshot_path,
)
from warehouse.release_index import index_path
from warehouse.releases import manifest_bytes, manifest_of, read_releases

START = dt.datetime(2026, 11, 1, 12, tzinfo=UTC)
NEW = ("hf/gpt-oss-20b", "clinicalqa@0", 0.5, dt.date(2026, 10, 25), dt.datetime(2026, 10, 25, 9, tzinfo=UTC), "v2", False)
AGAIN = ("openai/gpt-oss-20b", "clinicalqa@0", 0.74, dt.date(2026, 10, 28), dt.datetime(2026, 10, 28, 9, tzinfo=UTC),
         "v2", False)
TASKS = ("clinicalqa@0", "clinicalqa@1", "vitaldb-ioh@0")


def _catalogs(data: DataDir) -> list[publishing.Catalog]:
    """Six publishes: the fixture less two results, then one more each time, then a new model, a
    result superseding another, a withdrawal."""
    base = catalog(data)
    extra = [make_record(data, "late-new-model", NEW), make_record(data, "gptoss-cqa0-again", AGAIN)]
    for r in [*base.results, *extra]:
        data.result_path(r.run_id).write_bytes(encode_record(r))
    cut = base.results
    out = [dataclasses.replace(base, results=cut[:-2]), dataclasses.replace(base, results=cut[:-1]),
           dataclasses.replace(base, results=list(cut)), dataclasses.replace(base, results=[*cut, extra[0]]),
           dataclasses.replace(base, results=[*cut, *extra])]
    out.append(dataclasses.replace(base, results=[*cut, *extra],
                                   withdrawn={extra[1].run_id: {"reason": "leaked items", "date": "2026-11-01"}}))
    return out


def _answers(root: Path, release: str) -> dict[str, bytes]:
    client = TestClient(app=create_app(root, extra_route_handlers=()))
    with client:
        paths = [f"/v1/leaderboard?task={t}&release={release}" for t in TASKS]
        paths += [f"/v1/results?release={release}", f"/v1/lookup?model=openai/gpt-oss-20b&task=clinicalqa@0"
                  f"&release={release}", f"/v1/results/{RUN_IDS['gptoss-cqa0']}?release={release}"]
        out = {}
        for path in paths:
            response = client.get(path)
            out[path] = response.status_code, response.content
        detail = client.get(f"/v1/releases/{release}")
        assert detail.status_code == 200
        out["manifest"] = 200, msgspec.json.encode(detail.json()["manifest"], order="sorted")
        return out


def _full_records(monkeypatch) -> None:
    """Publish as before deltas: every record holds its full manifest."""
    real = publishing.make_record
    monkeypatch.setattr(publishing, "make_record", lambda manifest, now, previous, sign, before=None:
                        real(manifest, now, previous, sign))


def test_every_release_answers_as_before_the_upgrade(tmp_path: Path, monkeypatch) -> None:
    data, twin = DataDir(tmp_path / "data"), DataDir(tmp_path / "twin")
    steps, twin_steps = _catalogs(data), _catalogs(twin)
    before = {}
    with monkeypatch.context() as m:
        _full_records(m)
        for step in range(3):
            version = publishing.publish(data, steps[step], now=START + dt.timedelta(hours=step))[0]
            before[version] = _answers(data.root, version)
        for step, c in enumerate(twin_steps):
            publishing.publish(twin, c, now=START + dt.timedelta(hours=step))
    for step in range(3, 6):
        publishing.publish(data, steps[step], now=START + dt.timedelta(hours=step))
    records = read_releases(data)
    assert [r.manifest.get("format") for r in records] == [1, 1, 1, DELTA_FORMAT, DELTA_FORMAT, DELTA_FORMAT]
    for earlier, r in zip(records, records[1:]):
        if r.manifest["format"] == DELTA_FORMAT:
            assert r.manifest["previous_manifest_sha256"] == earlier.manifest_sha256
    for version, answers in before.items():
        assert _answers(data.root, version) == answers, f"release {version} answers otherwise after the upgrade"
    assert index_path(data).exists()  # every release found through the log's index (warehouse.release_index)
    kept = index_path(data).read_bytes()
    index_path(data).unlink()  # a directory upgraded before its first publish: no index yet, the log is scanned
    for version, answers in before.items():
        assert _answers(data.root, version) == answers, f"release {version} answers otherwise without the index"
    index_path(data).write_bytes(kept)
    for mine, whole in zip(records[3:], read_releases(twin)[3:]):
        assert mine.id == whole.id and manifest_of(data, mine) == whole.manifest
        got, want = _answers(data.root, mine.id), _answers(twin.root, whole.id)
        assert got == want, f"release {mine.id} answers otherwise than its full-manifest twin"
    withdrawn = records[-1].manifest
    # the withdrawn result, and the one it superseded, current again: two entries, one board
    assert sorted(e["run_id"] for e in withdrawn["results"]) == sorted([run_id("gptoss-cqa0-again"),
                                                                         RUN_IDS["gptoss-cqa0"]])
    assert set(withdrawn["leaderboards"]) == {"clinicalqa@0"} and not withdrawn["removed"]


def test_a_delta_is_what_is_signed_and_verify_checks_it(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    signed = []

    def sign(body: bytes) -> dict:
        signed.append(body)
        return {"key_id": "k", "value": "v", "signed": body.decode()}

    for step, c in enumerate(_catalogs(data)[:3]):
        publishing.publish(data, c, now=START + dt.timedelta(hours=step), sign=sign)
    last = read_releases(data)[-1]
    assert signed[-1] == manifest_bytes(last.manifest) and last.manifest["format"] == DELTA_FORMAT
    with TestClient(app=create_app(data.root, extra_route_handlers=())) as client:
        body = client.get(f"/v1/releases/{last.id}").json()
    assert body["delta"] == last.manifest and body["manifest"] == manifest_of(data, last)
    assert body["manifest"]["format"] == 1 and len(body["manifest"]["results"]) == body["n_results"]


def test_snapshots_bound_the_rebuild_and_are_only_a_cache(tmp_path: Path, monkeypatch) -> None:
    data = DataDir(tmp_path / "data")
    c = _catalogs(data)[2]
    monkeypatch.setattr("warehouse.publish.SNAPSHOT_EVERY", 2)
    for step in range(5):
        w = {RUN_IDS["random-cqa0"]: {"reason": f"r{step}", "date": "2026-11-01"}} if step % 2 else {}
        publishing.publish(data, dataclasses.replace(c, withdrawn=w), now=START + dt.timedelta(hours=step))
    records = read_releases(data)
    snapped = [r.id for r in records if snapshot_path(data, r.id).exists()]
    assert snapped == [records[1].id, records[3].id]
    expected = manifest_of(data, records[-1])
    snapshot_path(data, records[3].id).unlink()  # derived: rebuilt from further back when missing
    assert manifest_of(data, records[-1]) == expected
    assert apply_deltas(records[0].manifest, [r.manifest for r in records[1:]]) == expected
    assert SNAPSHOT_EVERY >= 2

