"""Signed results and releases (docs/api.md, "Signatures"): what is signed, tampering, rotation, keys.

A data directory is published here the way ``pipelines.engine.release`` does it (results signed and
kept beside them, the key listed in the keys file, the manifest signed), then checked with
``medbench verify --offline`` in-process, before and after one byte of a copy is changed.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import msgspec
import pytest
from litestar.testing import TestClient

from api.app import create_app
from support.live_server import live_api
from pipelines.cli.main import main
from support.api_data import catalog
from warehouse.keys import (KEY_ENV, KEY_HOME_ENV, SigningKeyError, load_key, read_keys, sign_catalog, signing_key,
                            write_new_key)
from medbench.layout import DataDir
from warehouse.publish import publish
from medbench.records import encode_record
from warehouse.releases import read_releases
from warehouse.signing import LEFT_OUT, NOT_PUBLISHED, SIGNING_FIELDS, read_signature, signed_fields

UTC = dt.timezone.utc


def _publish_signed(data: DataDir, key_path: Path, day: dt.date, drop: int = 0) -> list[str]:
    """Publish the fixture catalog (less its last ``drop`` results) signed with the key at ``key_path``."""
    cat = catalog(data)
    cat.results = cat.results[:len(cat.results) - drop]
    for r in cat.results:
        data.result_path(r.run_id).write_bytes(encode_record(r))
    sign = sign_catalog(data, cat, load_key(key_path), today=day)
    publish(data, cat, now=dt.datetime.combine(day, dt.time(12), tzinfo=UTC), sign=sign)
    return [r.run_id for r in cat.results]


@pytest.fixture
def signed(tmp_path: Path) -> tuple[DataDir, list[str]]:
    key = tmp_path / "keys" / "k1.pem"
    write_new_key(key)
    data = DataDir(tmp_path / "data")
    return data, _publish_signed(data, key, dt.date(2026, 12, 1))


def _verify(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    code = main(["verify", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def _flip(path: Path, needle: bytes) -> None:
    """Change one byte of ``path``: the last digit of the first ``needle`` found."""
    body = bytearray(path.read_bytes())
    at = body.index(needle) + len(needle) - 1
    body[at] = ord("7") if body[at] != ord("7") else ord("3")
    path.write_bytes(bytes(body))


def test_signed_string_is_the_whole_record_less_the_left_out_fields(signed):
    data, run_ids = signed
    sig = read_signature(data, run_ids[0])
    body = json.loads(sig["signed"])
    record = msgspec.json.decode(data.result_path(run_ids[0]).read_bytes())
    assert set(body) == set(record) - set(LEFT_OUT) - set(NOT_PUBLISHED) | set(SIGNING_FIELDS)
    assert {"tier", "provenance", "n", "subgroups", "breakdowns", "contamination_status", "eval_date", "dataset",
            "demo"} <= set(body)
    assert "url" not in sig["signed"] and "status" not in body and "superseded_by" not in body
    assert body["predictions_sha256"] == record["predictions_sha256"] and body["run_id"] == run_ids[0]
    assert body["key_id"] == sig["key_id"] and body["signed_at"] == sig["signed_at"]


def test_every_result_and_the_release_verify_offline(signed, capsys):
    data, run_ids = signed
    fingerprint = read_keys(data)[0].fingerprint
    for run_id in run_ids:
        code, out = _verify(capsys, run_id, "--offline", str(data.root), "--trusted-keys", fingerprint)
        assert (code, out.splitlines()[0].split(" is signed")[0]) == (0, f"valid: result {run_id}"), out
        assert fingerprint in out and out.splitlines()[0].endswith("; predictions re-hashed")
    release = read_releases(data)[-1]
    assert release.signature is not None
    code, out = _verify(capsys, release.id, "--offline", str(data.root), "--trusted-keys", fingerprint)
    assert code == 0, out


@pytest.mark.parametrize("what", ["result", "predictions", "signature", "manifest"])
def test_one_changed_byte_fails_verification(signed, capsys, tmp_path, what):
    data, run_ids = signed
    copy = DataDir(shutil.copytree(data.root, tmp_path / "copy"))
    run_id, release_id = run_ids[0], read_releases(data)[-1].id
    if what == "result":
        _flip(copy.result_path(run_id), b'"value":0.')
    elif what == "predictions":
        body = bytearray(copy.predictions_path(run_id).read_bytes())
        body[len(body) // 2] ^= 0x01
        copy.predictions_path(run_id).write_bytes(bytes(body))
    elif what == "signature":
        _flip(copy.run_dir(run_id) / "signature.json", b'\\"value\\":0.')
    else:
        _flip(copy.release_log, b'"value":0.')
    target = release_id if what == "manifest" else run_id
    code, out = _verify(capsys, target, "--offline", str(copy.root))
    assert code == 1 and out.startswith("INVALID:"), out
    assert _verify(capsys, target, "--offline", str(data.root))[0] == 4  # the original still verifies (unpinned)


def test_a_status_change_or_hostname_is_not_signed(signed, capsys, tmp_path):
    data, run_ids = signed
    body = msgspec.json.decode(data.result_path(run_ids[0]).read_bytes())
    body.update(status="withdrawn", withdrawn={"reason": "x", "date": "2026-12-02"}, url="https://elsewhere/r/x",
                superseded_by=run_ids[1])
    data.result_path(run_ids[0]).write_bytes(msgspec.json.encode(body))
    assert _verify(capsys, run_ids[0], "--offline", str(data.root))[0] == 4


def test_rotation_keeps_old_results_verifiable(signed, capsys, tmp_path):
    data, run_ids = signed
    old_key = read_keys(data)[0]
    shutil.rmtree(data.run_dir(run_ids[-1]))  # this run is new at the second publish
    new_key_path = tmp_path / "keys" / "k2.pem"
    write_new_key(new_key_path)
    _publish_signed(data, new_key_path, dt.date(2026, 12, 3))
    keys = read_keys(data)
    assert [k.key_id for k in keys] == [old_key.key_id, load_key(new_key_path).key_id]
    assert keys[0].valid_until == dt.date(2026, 12, 3) and keys[1].valid_until is None
    assert read_signature(data, run_ids[0])["key_id"] == old_key.key_id
    assert read_signature(data, run_ids[-1])["key_id"] == keys[1].key_id
    for run_id in (run_ids[0], run_ids[-1]):
        assert _verify(capsys, run_id, "--offline", str(data.root))[0] == 4
    for release in read_releases(data):
        assert _verify(capsys, release.id, "--offline", str(data.root))[0] == 4
    # a user who trusts only the new key cannot verify what the old one signed
    trusted = tmp_path / "trusted.json"
    trusted.write_text(json.dumps({"keys": [msgspec.to_builtins(keys[1])]}))
    assert _verify(capsys, run_ids[-1], "--offline", str(data.root), "--trusted-keys", str(trusted))[0] == 0
    code, out = _verify(capsys, run_ids[0], "--offline", str(data.root), "--trusted-keys", str(trusted))
    assert code == 1 and "not among the keys" in out
    with TestClient(create_app(data.root, extra_route_handlers=())) as client:
        served = client.get("/v1/keys").json()["keys"]
        result = client.get(f"/v1/results/{run_ids[0]}").json()
    assert [k["key_id"] for k in served] == [k.key_id for k in keys]
    assert served[0]["algorithm"] == "ed25519" and served[0]["fingerprint"].startswith("SHA256:")
    signed = json.loads(result["signature"]["signed"])
    assert {k: v for k, v in signed.items() if k not in SIGNING_FIELDS} == json.loads(json.dumps(signed_fields(
        msgspec.json.decode(data.result_path(run_ids[0]).read_bytes(), type=type(catalog(data).results[0])))))


def test_real_data_without_a_key_is_one_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(KEY_ENV, raising=False)
    data = DataDir(tmp_path / "data")
    data.claim("real")
    with pytest.raises(SigningKeyError, match=f"no signing key: set {KEY_ENV}"):
        signing_key(data, print)
    from pipelines.cli.errors import describe

    code, line = describe(SigningKeyError("no signing key: set it"))
    assert code == 2 and "\n" not in line


def test_a_key_inside_the_data_directory_is_refused(tmp_path, monkeypatch):
    data = DataDir(tmp_path / "data")
    data.claim("real")
    write_new_key(data.root / "key.pem")
    monkeypatch.setenv(KEY_ENV, str(data.root / "key.pem"))
    with pytest.raises(SigningKeyError, match="inside the data directory"):
        signing_key(data, print)


def test_a_demo_directory_gets_one_key_of_its_own_outside_it_and_keeps_it_when_moved(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv(KEY_HOME_ENV, str(tmp_path / "home"))
    said: list[str] = []
    a, b = DataDir(tmp_path / "a"), DataDir(tmp_path / "b")
    a.claim("demo")
    b.claim("demo")
    first = signing_key(a, said.append)
    assert Path(first.source).parent == tmp_path / "home" and not Path(first.source).is_relative_to(a.root)
    assert any(first.source in line and "created" in line for line in said)
    assert first.key_id.startswith("demo-") and Path(first.source).name == f"{first.key_id}.pem"
    assert signing_key(a, said.append).key_id == first.key_id  # reused
    assert signing_key(b, said.append).key_id != first.key_id  # one per data directory
    moved = DataDir(Path(shutil.move(str(a.root), str(tmp_path / "renamed" / "elsewhere"))))
    said.clear()
    assert signing_key(moved, said.append).key_id == first.key_id  # the key follows the directory
    assert not any("created" in line for line in said) and any("demo key demo-" in line for line in said)


def test_withdraw_on_real_data_without_a_key_says_so_in_one_line_and_records_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(KEY_ENV, raising=False)
    data = DataDir(tmp_path / "data")
    data.claim("real")
    record = catalog(data).results[0]
    data.result_path(record.run_id).write_bytes(encode_record(record))
    monkeypatch.setenv("MEDBENCH_DATA", str(data.root))
    assert main(["withdraw", record.run_id, "--reason", "leaked"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"medbench: no signing key: set {KEY_ENV}") and err.count("\n") == 1
    assert not data.withdrawal_log.exists() and not data.warehouse.exists()


def test_online_verify_of_a_served_result_release_and_a_changed_predictions_file(signed, capsys, tmp_path):
    data, run_ids = signed
    body = bytearray(data.predictions_path(run_ids[1]).read_bytes())
    body[len(body) // 2] ^= 0x01
    data.predictions_path(run_ids[1]).write_bytes(bytes(body))
    with live_api(data.root, tmp_path / "server.log") as server:
        assert _verify(capsys, run_ids[0], "--api-url", server.base)[0] == 0
        assert _verify(capsys, read_releases(data)[-1].id, "--api-url", server.base)[0] == 0
        code, out = _verify(capsys, run_ids[1], "--api-url", server.base)
    assert code == 1 and out.startswith(f"INVALID: result {run_ids[1]}: predictions:"), out
