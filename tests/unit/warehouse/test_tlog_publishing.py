"""Each publish writes to the transparency log (``warehouse.tlog.publishing``, as
``pipelines.engine.release.release`` calls it): the release log edited, truncated (with the log and
its checkpoint) or given a duplicated id is refused before anything is published; a deleted
withdrawal line is restored from the log; the first publish after an upgrade verifies the existing
release chain; a new key takes over only by a rotation both keys sign."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from pathlib import Path

import msgspec
import pytest

from support.api_data import publish_signed, signed_catalog
from warehouse.keys import KEY_ENV, load_key, write_new_key
from medbench.layout import DataDir
from warehouse.publish import publish
from medbench.records import encode_record
from warehouse.releases import manifest_bytes, read_releases
from warehouse.tlog import publishing
from warehouse.tlog.audit import LogIntegrityError, audit
from warehouse.tlog.checkpoint import origin_for, sign_checkpoint
from warehouse.tlog.entries import parse_entry
from warehouse.tlog.publisher import KEPT_ENV
from warehouse.tlog.signer import from_signing_key
from warehouse.tlog.store import LogStore
from warehouse.withdrawals import public_map, withdraw, withdrawals

UTC = dt.timezone.utc


def key():
    return load_key(Path(os.environ[KEY_ENV]))


def publish_logged(data: DataDir, now: dt.datetime, with_late_run: bool = False, signing=None) -> list[str]:
    """What ``release`` does around ``warehouse.publish``: check the log, publish, log what was published."""
    signing = signing or key()
    said: list[str] = []
    session = publishing.begin(data, signing, said.append)
    catalog, sign = signed_catalog(data, with_late_run, today=now.date())
    catalog.withdrawn = public_map(withdrawals(data))
    publish(data, catalog, now=now, sign=sign)
    session.record(catalog.results, catalog.withdrawn)
    return said


@pytest.fixture()
def data(tmp_path, monkeypatch) -> DataDir:
    monkeypatch.setenv(KEPT_ENV, str(tmp_path / "kept" / "log.checkpoint"))
    d = DataDir(tmp_path / "data")
    publish_logged(d, dt.datetime(2026, 10, 29, 12, tzinfo=UTC))
    return d


def releases_in_log(data: DataDir) -> list[str]:
    store = LogStore.of_data(data.root)
    return [b["id"] for b in map(parse_entry, store.iter_entries()) if b["type"] == "release"]


def test_a_publish_logs_its_results_and_release(data: DataDir) -> None:
    state = audit(LogStore.of_data(data.root), kept=Path(os.environ[KEPT_ENV]).read_text())
    catalog, _ = signed_catalog(data)
    assert {rid for kind, rid in state.positions if kind == "result"} == {r.run_id for r in catalog.results}
    assert releases_in_log(data) == [r.id for r in read_releases(data)]


def test_upgrade_verifies_the_existing_release_chain_then_logs_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(KEPT_ENV, str(tmp_path / "kept.checkpoint"))
    d = DataDir(tmp_path / "old")
    publish_signed(d, now=dt.datetime(2026, 10, 1, tzinfo=UTC))  # published before the log existed
    publish_signed(d, with_late_run=True, now=dt.datetime(2026, 10, 2, tzinfo=UTC))
    lines = d.release_log.read_bytes().splitlines(keepends=True)
    d.release_log.write_bytes(lines[0].replace(b'"predictions_sha256":"', b'"predictions_sha256":"0', 1) + lines[1])
    with pytest.raises(LogIntegrityError, match="does not hash to its manifest_sha256"):
        publishing.begin(d, key(), lambda _: None)
    assert not LogStore.of_data(d.root).entries_path.exists()  # no tree built from a broken chain
    d.release_log.write_bytes(b"".join(lines))
    publish_logged(d, dt.datetime(2026, 10, 3, tzinfo=UTC), with_late_run=True)
    assert releases_in_log(d) == [r.id for r in read_releases(d)] and len(releases_in_log(d)) == 2


@pytest.mark.parametrize("tamper, message", [
    ("edit", "does not hash to its manifest_sha256"),
    ("duplicate", "repeats release"),
    ("truncate", "in the transparency log but not in"),
    ("rehash", "is not the one the transparency log holds"),
])
def test_a_tampered_release_log_is_refused(data: DataDir, tamper: str, message: str) -> None:
    publish_logged(data, dt.datetime(2026, 10, 30, tzinfo=UTC), with_late_run=True)
    lines = data.release_log.read_bytes().splitlines(keepends=True)
    if tamper == "edit":
        lines[0] = lines[0].replace(b'"predictions_sha256":"', b'"predictions_sha256":"0', 1)
    elif tamper == "duplicate":
        lines.append(lines[0])
    elif tamper == "truncate":
        lines = lines[:1]
    else:  # the manifest edited and its hash recomputed: consistent alone, not with the log
        record = msgspec.json.decode(lines[1])
        record["manifest"]["code_revision"] = "forged"
        record["manifest_sha256"] = hashlib.sha256(manifest_bytes(record["manifest"])).hexdigest()
        lines[1] = msgspec.json.encode(record) + b"\n"
    data.release_log.write_bytes(b"".join(lines))
    before = data.pointer.read_text()
    with pytest.raises(LogIntegrityError, match=message):
        publish_logged(data, dt.datetime(2026, 10, 31, tzinfo=UTC), with_late_run=True)
    assert data.pointer.read_text() == before  # refused before anything was published


def test_truncated_log_and_checkpoint_together_are_refused(data: DataDir) -> None:
    publish_logged(data, dt.datetime(2026, 10, 30, tzinfo=UTC), with_late_run=True)
    store = LogStore.of_data(data.root)
    lines = store.entries_path.read_bytes().splitlines(keepends=True)
    store.entries_path.write_bytes(b"".join(lines[:3]))
    store.rebuild()
    # the in-directory checkpoint truncated with it, re-signed by the publisher's own key
    store.write_checkpoint(sign_checkpoint(origin_for(data.demo_or_real()), 3, store.root(3), [from_signing_key(key())]).note)
    assert audit(store).size == 3  # alone, the data directory looks consistent
    with pytest.raises(LogIntegrityError, match="truncated"):
        publishing.begin(data, key(), lambda _: None)


def test_a_deleted_withdrawal_line_is_restored_from_the_log(data: DataDir) -> None:
    catalog, _ = signed_catalog(data)
    run = catalog.results[0].run_id
    data.result_path(run).write_bytes(encode_record(catalog.results[0]))  # withdraw checks the result exists
    withdraw(data, run, "wrong split", now=dt.datetime(2026, 11, 1, tzinfo=UTC))
    publish_logged(data, dt.datetime(2026, 11, 1, tzinfo=UTC))
    data.withdrawal_log.write_bytes(b"")  # the line deleted
    said = publish_logged(data, dt.datetime(2026, 11, 2, tzinfo=UTC))
    assert any(f"restored the withdrawal of {run}" in line for line in said)
    assert withdrawals(data)[run].reason == "wrong split"
    manifest = read_releases(data)[-1].manifest
    assert next(r for r in manifest["results"] if r["run_id"] == run)["status"] == "withdrawn"


def test_a_new_key_takes_over_only_with_the_old_one(data: DataDir, tmp_path, monkeypatch) -> None:
    write_new_key(tmp_path / "new.pem")
    new = load_key(tmp_path / "new.pem")
    monkeypatch.delenv(publishing.PREVIOUS_KEY_ENV, raising=False)
    with pytest.raises(LogIntegrityError, match=publishing.PREVIOUS_KEY_ENV):
        publishing.begin(data, new, lambda _: None)
    monkeypatch.setenv(publishing.PREVIOUS_KEY_ENV, os.environ[KEY_ENV])
    said = publish_logged(data, dt.datetime(2026, 11, 3, tzinfo=UTC), signing=new)
    assert any("handed over" in line for line in said)
    state = audit(LogStore.of_data(data.root))
    assert state.active_key == new.key_id and state.keys_valid_at(state.size) == [new.public_key]


def test_withdraw_is_refused_before_recording_on_a_tampered_release_log(data: DataDir) -> None:
    from pipelines.engine.withdraw import withdraw_and_publish

    catalog, _ = signed_catalog(data)
    run = catalog.results[0].run_id
    data.result_path(run).write_bytes(encode_record(catalog.results[0]))
    data.release_log.write_bytes(data.release_log.read_bytes() * 2)  # a duplicated release id
    with pytest.raises(LogIntegrityError, match="repeats release"):
        withdraw_and_publish(None, data, run, "wrong split", lambda _: None)  # refused before the specs are read
    assert run not in withdrawals(data)
