"""The log as the publisher keeps it: checkpoints, key lifetimes, and refusals of a log that was
edited, truncated or given a duplicate id (docs/transparency-log.md "No quiet rewrites")."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from warehouse.tlog.audit import LogIntegrityError, audit
from warehouse.tlog.checkpoint import (DEMO_ORIGIN, CheckpointError, key_hash, origin_for, parse_checkpoint,
                                       sign_checkpoint, sign_note, verify_checkpoint)
from warehouse.tlog.entries import EntryError, parse_entry, release_entry, result_entry, withdrawal_entry
from warehouse.tlog.publisher import KEPT_ENV, append, kept_checkpoint_path, rotate
from warehouse.tlog.signer import Ed25519NoteSigner, from_signing_key
from warehouse.tlog.store import LogStore

ORIGIN = "medbench.test/log"


def signer() -> Ed25519NoteSigner:
    return Ed25519NoteSigner(Ed25519PrivateKey.generate())


def result(i: int) -> bytes:
    return result_entry(f"{i:012x}", hashlib.sha256(b"record %d" % i).hexdigest())


@pytest.fixture()
def log(tmp_path: Path):
    store = LogStore(tmp_path / "data" / "log")
    key = signer()
    kept = tmp_path / "keys" / "log.checkpoint"
    append(store, [result(i) for i in range(5)], key, ORIGIN, kept)
    append(store, [release_entry("2026-12-07T05:00:00Z-abcdef01", "ab" * 32)], key, ORIGIN, kept)
    return store, key, kept


def test_c2sp_signed_note_known_answer() -> None:
    """The Go sumdb/note test vector (c2sp.org/signed-note): same key, text and signature line."""
    raw = base64.b64decode("AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz")
    peter = Ed25519NoteSigner(Ed25519PrivateKey.from_private_bytes(raw[1:]))
    text = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
    assert key_hash("PeterNeumann", peter.public_key).hex() == "c74f20a3"
    want = "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
    assert sign_note(text, "PeterNeumann", [peter]) == text + f"\n\u2014 PeterNeumann {want}\n"


def test_checkpoint_form_and_signature() -> None:
    key, other = signer(), signer()
    cp = sign_checkpoint(ORIGIN, 12, bytes(range(32)), [key])
    lines = cp.note.split("\n")
    assert lines[:4] == [ORIGIN, "12", base64.b64encode(bytes(range(32))).decode(), ""]
    assert lines[4].startswith("\u2014 " + ORIGIN + " ")
    assert parse_checkpoint(cp.note) == cp
    assert verify_checkpoint(cp.note, ORIGIN, [key.public_key])[1] == [key.public_key]
    with pytest.raises(CheckpointError):
        verify_checkpoint(cp.note, ORIGIN, [other.public_key])
    with pytest.raises(CheckpointError):
        verify_checkpoint(cp.note, "another/log", [key.public_key])
    with pytest.raises(CheckpointError):  # a changed size breaks the signature of a known key
        verify_checkpoint(cp.note.replace("\n12\n", "\n13\n"), ORIGIN, [key.public_key])


def test_origin_is_configurable_and_distinct_for_demo(monkeypatch) -> None:
    monkeypatch.delenv("MEDBENCH_LOG_ORIGIN", raising=False)
    assert origin_for("demo") == DEMO_ORIGIN != origin_for("real")
    monkeypatch.setenv("MEDBENCH_LOG_ORIGIN", "medbench.example.org/log")
    assert origin_for("real") == "medbench.example.org/log"
    assert origin_for("demo") != origin_for("real")


def test_entries_are_typed_and_canonical() -> None:
    assert result(1) == b'{"id":"000000000001","record_sha256":"%s","type":"result"}' % \
        hashlib.sha256(b"record 1").hexdigest().encode()
    assert parse_entry(withdrawal_entry("000000000001", "2026-12-07", "wrong split"))["type"] == "withdrawal"
    for bad in (b'{"type":"result","id":"x","record_sha256":"%s"}' % (b"a" * 64),  # keys not sorted
                b'{"id":"x","type":"opinion"}', b'{"id":"x","record_sha256":"zz","type":"result"}', b"[1]"):
        with pytest.raises(EntryError):
            parse_entry(bad)


def test_publish_appends_and_verifies(log) -> None:
    store, key, kept = log
    state = audit(store, ORIGIN, kept.read_text())
    assert state.size == 7  # the first key's entry, five results, one release
    assert parse_entry(store.entry(0))["type"] == "key_rotation"
    assert kept.read_text() == store.read_checkpoint() == state.checkpoint.note
    again = append(store, [result(3), result(5)], key, ORIGIN, kept)  # result 3 is there: skipped
    assert again.size == 8
    with pytest.raises(LogIntegrityError, match="already in the log with other content"):
        append(store, [release_entry("2026-12-07T05:00:00Z-abcdef01", "cd" * 32)], key, ORIGIN, kept)
    # a result re-recorded under its run id (a rerun) is a new entry; its proof names the latest
    rerun = append(store, [result_entry(f"{3:012x}", "cd" * 32)], key, ORIGIN, kept)
    state = audit(store, ORIGIN, kept.read_text())
    assert rerun.size == 9 and state.positions[("result", f"{3:012x}")] == 8


def test_edited_entry_is_refused(log) -> None:
    store, key, kept = log
    body = store.entries_path.read_bytes()
    store.entries_path.write_bytes(_edit_record(body, 2))
    with pytest.raises(LogIntegrityError, match="edited"):
        append(store, [result(9)], key, ORIGIN, kept)
    store.rebuild()  # an attacker rebuilding the hashes too: the signed root no longer matches
    with pytest.raises(LogIntegrityError, match="edited or forked"):
        append(store, [result(9)], key, ORIGIN, kept)


def test_truncated_with_its_checkpoint_is_refused(log, tmp_path) -> None:
    store, key, kept = log
    before = store.read_checkpoint()
    lines = store.entries_path.read_bytes().splitlines(keepends=True)
    store.entries_path.write_bytes(b"".join(lines[:4]))
    store.rebuild()
    # the in-directory checkpoint truncated too, re-signed by the key for the shorter log
    store.write_checkpoint(sign_checkpoint(ORIGIN, 4, store.root(4), [key]).note)
    assert audit(store, ORIGIN).size == 4  # alone, the data directory looks consistent
    with pytest.raises(LogIntegrityError, match="truncated"):
        append(store, [result(9)], key, ORIGIN, kept)
    with pytest.raises(LogIntegrityError, match="truncated"):  # a reader's old checkpoint finds it too
        audit(store, ORIGIN, before)


def test_duplicated_id_is_refused(log) -> None:
    store, key, kept = log
    lines = store.entries_path.read_bytes().splitlines(keepends=True)
    store.entries_path.write_bytes(b"".join(lines) + lines[3])
    store.rebuild()
    with pytest.raises(LogIntegrityError, match="appears twice"):
        append(store, [result(9)], key, ORIGIN, kept)


def test_rolled_back_checkpoint_is_refused(log) -> None:
    store, key, kept = log
    old = store.read_checkpoint()
    append(store, [result(9)], key, ORIGIN, kept)
    store.write_checkpoint(old)  # the data directory's checkpoint put back, the log left longer
    with pytest.raises(LogIntegrityError, match="rolled back"):
        append(store, [result(10)], key, ORIGIN, kept)


def test_key_retired_before_a_checkpoints_size_is_invalid(log) -> None:
    store, old, kept = log
    new = signer()
    size_before = store.size()
    rotated = rotate(store, old, new, ORIGIN, kept)
    assert rotated.size == size_before + 1
    rotation = parse_entry(store.entry(size_before))
    assert rotation["old"]["key_id"] and rotation["signatures"]["old"] and rotation["signatures"]["new"]
    state = audit(store, ORIGIN, kept.read_text())
    assert state.keys_valid_at(size_before) == [old.public_key]
    assert state.keys_valid_at(size_before + 1) == [new.public_key]
    # the retired key signs a checkpoint of the log that holds its retirement: invalid
    store.write_checkpoint(sign_checkpoint(ORIGIN, store.size(), store.root(), [old]).note)
    with pytest.raises(LogIntegrityError, match="does not verify"):
        audit(store, ORIGIN)
    store.write_checkpoint(rotated.note)
    with pytest.raises(LogIntegrityError, match="not the signing key"):
        append(store, [result(11)], old, ORIGIN, kept)
    assert append(store, [result(11)], new, ORIGIN, kept).size == size_before + 2


def test_rotation_needs_both_signatures(log) -> None:
    store, old, kept = log
    new, stranger = signer(), signer()
    with pytest.raises(LogIntegrityError, match="only the current key"):
        rotate(store, stranger, new, ORIGIN, kept)
    from warehouse.tlog.entries import rotation_entry
    with pytest.raises(EntryError, match="old key's signature"):  # signed by another key than the old one
        rotation_entry(old.public_key, new.public_key, stranger.sign, new.sign)
    with pytest.raises(EntryError, match="new key's signature"):
        rotation_entry(old.public_key, new.public_key, old.sign, stranger.sign)


def test_kept_checkpoint_lives_outside_the_data_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(KEPT_ENV, raising=False)
    data = tmp_path / "data"
    beside = kept_checkpoint_path(data, tmp_path / "keys" / "k.pem")
    assert beside.parent == tmp_path / "keys" / "k.checkpoints" and beside.suffix == ".checkpoint"
    assert kept_checkpoint_path(tmp_path / "other", tmp_path / "keys" / "k.pem") != beside  # one per data directory
    monkeypatch.setenv(KEPT_ENV, str(data / "releases" / "cp"))
    with pytest.raises(LogIntegrityError, match="inside the data directory"):
        kept_checkpoint_path(data, None)


def test_adapter_signs_with_the_publishers_key(tmp_path) -> None:
    from warehouse.keys import load_key, write_new_key
    write_new_key(tmp_path / "k.pem")
    note_signer = from_signing_key(load_key(tmp_path / "k.pem"))
    cp = sign_checkpoint(ORIGIN, 1, bytes(32), [note_signer])
    assert verify_checkpoint(cp.note, ORIGIN, [note_signer.public_key])


def _edit_record(body: bytes, i: int) -> bytes:
    """The entry file with result ``i``'s record hash changed to another valid one."""
    old = hashlib.sha256(b"record %d" % i).hexdigest().encode()
    return body.replace(old, hashlib.sha256(b"forged").hexdigest().encode(), 1)
