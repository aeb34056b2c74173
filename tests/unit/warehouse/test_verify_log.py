"""``medbench verify`` against the transparency log (docs/transparency-log.md "Verifying"): the
inclusion proof, the key's lifetime by position, ``--since`` a kept checkpoint; offline from a data
directory's log and online through the API. An edited, truncated or duplicated log is invalid; a
checkpoint signed by a key after its retirement is invalid; a kept checkpoint is extended, a forked
one is not."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import shutil
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from litestar.testing import TestClient

from api.app import create_app
from api.client import ApiClient
from pipelines.cli.main import main
from support.api_data import LATE_RUN, RUN_IDS, run_id, signed_catalog
from warehouse.keys import KEY_ENV, load_key
from medbench.layout import DataDir
from warehouse.publish import publish
from medbench.records import encode_record
from warehouse.signing import SigningKey
from warehouse.tlog import publishing
from warehouse.tlog.checkpoint import sign_checkpoint
from warehouse.tlog.entries import key_id_of, parse_entry, release_entry
from warehouse.tlog.proofs import ProofError, check_key_lifetime
from warehouse.tlog.publisher import KEPT_ENV, append, rotate
from warehouse.tlog.reader import open_view
from warehouse.tlog.signer import Ed25519NoteSigner, from_signing_key
from warehouse.tlog.store import LogStore
from warehouse.withdrawals import public_map, withdrawals

UTC = dt.timezone.utc
LATE = run_id(LATE_RUN[0])  # support.api_data's late run, published only by the second publish
FIRST = RUN_IDS["gptoss-cqa0"]


def key():
    return load_key(Path(os.environ[KEY_ENV]))


def publish_logged(data: DataDir, now: dt.datetime, with_late_run: bool = False) -> None:
    session = publishing.begin(data, key(), lambda line: None)
    catalog, sign = signed_catalog(data, with_late_run, today=now.date())
    catalog.withdrawn = public_map(withdrawals(data))
    for r in catalog.results:  # what the pipeline stores beside each result's predictions
        data.result_path(r.run_id).write_bytes(encode_record(r))
    publish(data, catalog, now=now, sign=sign)
    session.record(catalog.results, catalog.withdrawn)


@pytest.fixture()
def logged(tmp_path, monkeypatch) -> tuple[DataDir, Path, Path]:
    """A data directory published twice (the late run only the second time), its log at each step:
    (data, a checkpoint kept after the first publish, a backup of the log after the first publish)."""
    monkeypatch.setenv(KEPT_ENV, str(tmp_path / "kept" / "log.checkpoint"))
    data = DataDir(tmp_path / "data")
    publish_logged(data, dt.datetime(2026, 10, 29, 12, tzinfo=UTC))
    store = LogStore.of_data(data.root)
    before = tmp_path / "before.checkpoint"
    before.write_text(store.read_checkpoint())
    shutil.copytree(store.dir, tmp_path / "backup")
    publish_logged(data, dt.datetime(2026, 10, 30, 12, tzinfo=UTC), with_late_run=True)
    assert any(parse_entry(e).get("id") == LATE for e in store.iter_entries())
    return data, before, tmp_path / "backup"


def verify(capsys, *args: str) -> tuple[int, str]:
    code = main(["verify", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def offline(capsys, data: DataDir, run_id: str = LATE, *more: str) -> tuple[int, str]:
    return verify(capsys, run_id, "--offline", str(data.root), "--trusted-keys", key().fingerprint, *more)


def test_a_logged_result_and_release_verify_with_their_inclusion_proof(logged, capsys) -> None:
    data, _, _ = logged
    code, out = offline(capsys, data)
    assert code == 0 and "in the transparency log: entry " in out and "(valid at that size)" in out, out
    release = json.loads(data.release_log.read_text().splitlines()[-1])["id"]
    code, out = offline(capsys, data, release)
    assert code == 0 and "in the transparency log: entry " in out, out
    code, out = verify(capsys, LATE, "--offline", str(data.root), "--trusted-keys", key().fingerprint, "--json")
    assert code == 0 and json.loads(out)["log"]["tree_size"] == LogStore.of_data(data.root).size()


def test_an_edited_log_is_invalid(logged, capsys) -> None:
    data, _, _ = logged
    store = LogStore.of_data(data.root)
    store.entries_path.write_bytes(store.entries_path.read_bytes().replace(LATE.encode(), b"0123456789ab"))
    code, out = offline(capsys, data, FIRST)
    assert code == 1 and out.startswith(f"INVALID: result {FIRST}: log: ") and "edited" in out, out


def test_a_log_truncated_with_its_checkpoint_is_invalid(logged, capsys) -> None:
    data, before, backup = logged
    store = LogStore.of_data(data.root)
    shutil.rmtree(store.dir)  # the log and its checkpoint rolled back together: a smaller valid log
    shutil.copytree(backup, store.dir)
    code, out = offline(capsys, data)
    assert code == 1 and "log: no entry of the log's checkpoint holds result " + LATE in out, out
    kept = Path(os.environ[KEPT_ENV])  # the checkpoint the publisher kept: what a reader may keep too
    code, out = offline(capsys, data, FIRST, "--since", str(kept))
    assert code == 1 and "truncated" in out, out
    assert offline(capsys, data, FIRST, "--since", str(before))[0] == 0


def test_a_log_with_a_duplicated_id_is_invalid(logged, capsys) -> None:
    data, _, _ = logged
    store = LogStore.of_data(data.root)
    release = next(e for e in store.iter_entries() if parse_entry(e)["type"] == "release")
    with open(store.entries_path, "ab") as fh:
        fh.write(release + b"\n")
    store.rebuild()
    code, out = offline(capsys, data)
    assert code == 1 and "appears twice in the log" in out, out


def _trusted(tmp_path: Path, *public: bytes) -> Path:
    path = tmp_path / "trusted.json"
    path.write_text(json.dumps({"keys": [{"key_id": key_id_of(p), "public_key": base64.b64encode(p).decode()}
                                         for p in public]}))
    return path


def test_a_checkpoint_signed_after_its_keys_retirement_is_invalid(logged, capsys, tmp_path) -> None:
    data, _, _ = logged
    store = LogStore.of_data(data.root)
    old = from_signing_key(key())
    new = Ed25519NoteSigner(Ed25519PrivateKey.generate())
    kept = Path(os.environ[KEPT_ENV])
    rotated = rotate(store, old, new, publishing.origin_for(data.demo_or_real()), kept)
    append(store, [release_entry("r-after", "ab" * 32)], new, rotated.origin, kept)
    size = store.size()
    forged = sign_checkpoint(rotated.origin, size, store.root(size), [old])  # the retired key signs on
    entries = list(store.iter_entries())
    with pytest.raises(ProofError, match="not signed by a trusted key the log holds valid at that size"):
        check_key_lifetime(entries, forged.note, [old.public_key, new.public_key])
    assert check_key_lifetime(entries, store.read_checkpoint(), [new.public_key]).size == size
    store.write_checkpoint(forged.note)
    trusted = _trusted(tmp_path, old.public_key, new.public_key)
    code, out = verify(capsys, FIRST, "--offline", str(data.root), "--trusted-keys", str(trusted))
    assert code == 1 and "log: the log's checkpoint does not verify" in out, out


def test_since_a_forked_checkpoint_is_invalid(logged, capsys, tmp_path) -> None:
    data, before, _ = logged
    fork = LogStore.of_data(tmp_path / "fork")  # another history under the same key and origin
    origin = publishing.origin_for(data.demo_or_real())
    append(fork, [release_entry("forked", "cd" * 32)], from_signing_key(key()), origin, tmp_path / "fork.kept")
    forked = tmp_path / "forked.checkpoint"
    forked.write_text(fork.read_checkpoint())
    code, out = offline(capsys, data, LATE, "--since", str(before))
    assert code == 0 and "the log extends your checkpoint of size" in out, out
    code, out = offline(capsys, data, LATE, "--since", str(forked))
    assert code == 1 and "log: " in out and ("edited or forked" in out or "does not extend" in out), out


def _online(monkeypatch, client: TestClient) -> None:
    import api.client as api_client

    def forward(request: httpx.Request) -> httpx.Response:
        answer = client.get(request.url.raw_path.decode())
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    monkeypatch.setattr(api_client, "ApiClient", lambda base_url=None, **kw: ApiClient(
        "http://server.test", transport=httpx.MockTransport(forward)))


def test_online_proof_key_lifetime_and_since(logged, capsys, monkeypatch, tmp_path) -> None:
    data, before, _ = logged
    fork = LogStore.of_data(tmp_path / "fork")
    append(fork, [release_entry("forked", "cd" * 32)], from_signing_key(key()), publishing.origin_for(data.demo_or_real()),
           tmp_path / "fork.kept")
    forked = tmp_path / "forked.checkpoint"
    forked.write_text(fork.read_checkpoint())
    release = json.loads(data.release_log.read_text().splitlines()[-1])["id"]
    with TestClient(create_app(data.root, extra_route_handlers=())) as client:
        _online(monkeypatch, client)
        code, out = verify(capsys, LATE)
        assert code == 0 and "in the transparency log: entry " in out, out
        code, out = verify(capsys, release, "--since", str(before))
        assert code == 0 and "the log extends your checkpoint of size" in out, out
        code, out = verify(capsys, LATE, "--since", str(forked))
        assert code == 1 and "does not extend the kept checkpoint" in out, out
        store = LogStore.of_data(data.root)
        store.entries_path.write_bytes(store.entries_path.read_bytes().replace(LATE.encode(), b"0123456789ab"))
        code, out = verify(capsys, FIRST)
        assert code == 1 and "log: " in out and "edited" in out, out
        code, out = verify(capsys, release)  # the release route itself answers log_unavailable: invalid, not 3
        assert code == 1 and out.startswith(f"INVALID: release {release}: log: ") and "edited" in out, out


def test_a_demo_key_has_the_same_id_in_the_log_as_in_its_signatures(tmp_path, monkeypatch) -> None:
    demo = SigningKey(Ed25519PrivateKey.generate(), "demo.pem", demo=True)
    store = LogStore.of_data(tmp_path / "data")
    append(store, [release_entry("r1", "ab" * 32)], from_signing_key(demo), "medbench.test/demo", tmp_path / "kept")
    first = parse_entry(next(store.iter_entries()))
    assert first["id"] == first["new"]["key_id"] == demo.key_id and demo.key_id.startswith("demo-")
    assert open_view(tmp_path / "data").checkpoint_body()["key_id"] == demo.key_id


def test_log_client_commands_answer_what_the_routes_answer(logged, capsys, monkeypatch, tmp_path) -> None:
    """``medbench log checkpoint|entries|proof|consistency`` (docs/cli.md): the checkpoint's note is
    printed as is, so that it can be kept and given to ``medbench verify --since``."""
    data, before, _ = logged
    size = LogStore.of_data(data.root).size()
    with TestClient(create_app(data.root, extra_route_handlers=())) as client:
        _online(monkeypatch, client)
        assert main(["log", "checkpoint"]) == 0
        note = capsys.readouterr().out
        assert note == LogStore.of_data(data.root).read_checkpoint()
        kept = tmp_path / "kept.txt"
        kept.write_text(note)
        assert main(["log", "entries", "--start", "1", "--end", "3"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == f"entries 1 to 3 of a log of {size}" and len(lines) == 3
        assert main(["log", "proof", LATE, "--json"]) == 0
        proof = json.loads(capsys.readouterr().out)
        assert proof["tree_size"] == size and proof["entry"].startswith('{"id":"' + LATE)
        assert main(["log", "proof", FIRST]) == 0
        assert f"result {FIRST}: entry " in capsys.readouterr().out
        first = int(before.read_text().splitlines()[1])
        assert main(["log", "consistency", "--from", str(first), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["to"] == size
        assert main(["log", "proof", "0123456789ab"]) == 1
        assert "run_not_found" in capsys.readouterr().err
        assert main(["log", "entries", "--start", "5", "--end", "2"]) == 2
        code, out = verify(capsys, LATE, "--since", str(kept))
        assert code == 0 and f"the log extends your checkpoint of size {size}" in out, out
