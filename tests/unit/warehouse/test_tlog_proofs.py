"""``warehouse.tlog.proofs``: what a verifier checks of the log routes' answers (for ``medbench verify``):
a good inclusion proof and consistency proof pass; a proof against another key's checkpoint, a
forged entry, an entry that says another record hash, and a log that does not extend a kept
checkpoint each fail with one line."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from support.api_data import catalog
from medbench.layout import DataDir
from medbench.records import encode_record
from warehouse.tlog.checkpoint import sign_checkpoint
from warehouse.tlog.entries import record_sha256, result_entry
from warehouse.tlog.proofs import ProofError, check_proof, check_since, record_hash_of
from warehouse.tlog.publisher import append
from warehouse.tlog.reader import open_view
from warehouse.tlog.signer import Ed25519NoteSigner
from warehouse.tlog.store import LogStore

ORIGIN = "medbench.test/log"


@pytest.fixture()
def setup(tmp_path: Path):
    records = catalog(DataDir(tmp_path / "fixture")).results
    key = Ed25519NoteSigner(Ed25519PrivateKey.generate())
    store = LogStore.of_data(tmp_path / "data")
    old = append(store, [result_entry(r.run_id, record_sha256(r)) for r in records[:3]], key, ORIGIN,
                 tmp_path / "kept")
    append(store, [result_entry(r.run_id, record_sha256(r)) for r in records[3:]], key, ORIGIN, tmp_path / "kept")
    return records, key, old, open_view(tmp_path / "data")


def test_good_proofs_pass(setup) -> None:
    records, key, old, view = setup
    r = records[4]
    proof = view.proof_body("result", r.run_id)
    expect = {"type": "result", "id": r.run_id, "record_sha256": record_hash_of(encode_record(r))}
    current = check_proof(proof, [key.public_key], ORIGIN, expect)
    assert current.size == view.size
    kept = check_since(old.note, view.consistency_body(old.size, None), current, [key.public_key])
    assert kept.size == old.size


def test_bad_proofs_fail(setup) -> None:
    records, key, old, view = setup
    r = records[4]
    proof = view.proof_body("result", r.run_id)
    stranger = Ed25519NoteSigner(Ed25519PrivateKey.generate())
    with pytest.raises(ProofError, match="checkpoint does not verify"):
        check_proof(proof, [stranger.public_key])
    forged = copy.deepcopy(proof)
    forged["entry"] = result_entry(r.run_id, "0" * 64).decode()
    forged["leaf_hash"] = hashlib.sha256(b"\x00" + forged["entry"].encode()).hexdigest()
    with pytest.raises(ProofError, match="not in the log"):
        check_proof(forged, [key.public_key])
    with pytest.raises(ProofError, match="record_sha256 differ"):
        check_proof(proof, [key.public_key], expect={"record_sha256": "1" * 64})
    current = check_proof(proof, [key.public_key])
    # a fork: a checkpoint of the same size as the kept one but another root
    fork = sign_checkpoint(ORIGIN, old.size, hashlib.sha256(b"fork").digest(), [key]).note
    with pytest.raises(ProofError, match="does not extend"):
        check_since(fork, view.consistency_body(old.size, None), current, [key.public_key])
    bigger = sign_checkpoint(ORIGIN, view.size + 5, bytes(32), [key]).note
    with pytest.raises(ProofError, match="truncated or forked"):
        check_since(bigger, view.consistency_body(old.size, None), current, [key.public_key])
