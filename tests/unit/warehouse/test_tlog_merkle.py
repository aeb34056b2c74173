"""Known-answer tests of the log's tree hashing and proofs against RFC 6962's definitions.

The reference below is RFC 6962 §2.1 written as plainly as the RFC states it (MTH, PATH, PROOF and
SUBPROOF, recursive over lists of entries), independent of ``warehouse.tlog``. For every size 1 to
17, the stored log's root, every inclusion proof and every consistency proof must equal the
reference's bytes, and verify with RFC 9162's algorithms; a proof with one hash changed, or checked
against another index or size, must not verify.
"""

from __future__ import annotations

import hashlib

import pytest

from warehouse.tlog.merkle import (consistency_path, inclusion_path, leaf_hash, root_of_leaves, verify_consistency,
                                   verify_inclusion)
from warehouse.tlog.store import LogStore

ENTRIES = [b'{"n":%d}' % i for i in range(17)]


def mth(d: list[bytes]) -> bytes:
    n = len(d)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return hashlib.sha256(b"\x00" + d[0]).digest()
    k = 1
    while k * 2 < n:
        k *= 2
    return hashlib.sha256(b"\x01" + mth(d[:k]) + mth(d[k:])).digest()


def path(m: int, d: list[bytes]) -> list[bytes]:
    n = len(d)
    if n == 1:
        return []
    k = 1
    while k * 2 < n:
        k *= 2
    if m < k:
        return path(m, d[:k]) + [mth(d[k:])]
    return path(m - k, d[k:]) + [mth(d[:k])]


def subproof(m: int, d: list[bytes], b: bool) -> list[bytes]:
    n = len(d)
    if m == n:
        return [] if b else [mth(d)]
    k = 1
    while k * 2 < n:
        k *= 2
    if m <= k:
        return subproof(m, d[:k], b) + [mth(d[k:])]
    return subproof(m - k, d[k:], False) + [mth(d[:k])]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> LogStore:
    """One log appended a leaf, then two, then the rest: appends of every shape build the same files."""
    s = LogStore(tmp_path_factory.mktemp("log"))
    s.append(ENTRIES[:1])
    s.append(ENTRIES[1:3])
    for e in ENTRIES[3:]:
        s.append([e])
    return s


def test_known_answer_roots() -> None:
    # RFC 6962's shape by hand for 3 and 5 leaves: (ab)c and (abcd)e, never duplicating a node
    a, b, c, d, e = (hashlib.sha256(b"\x00" + x).digest() for x in ENTRIES[:5])
    node = lambda left, right: hashlib.sha256(b"\x01" + left + right).digest()  # noqa: E731
    assert mth(ENTRIES[:3]) == node(node(a, b), c)
    assert mth(ENTRIES[:5]) == node(node(node(a, b), node(c, d)), e)
    assert root_of_leaves([a, b, c]) == node(node(a, b), c)


@pytest.mark.parametrize("n", range(1, 18))
def test_root_and_every_inclusion_proof(store: LogStore, n: int) -> None:
    d = ENTRIES[:n]
    root = mth(d)
    assert store.root(n) == root
    assert root_of_leaves([leaf_hash(e) for e in d]) == root
    for m in range(n):
        proof = store.inclusion(m, n)
        assert proof == path(m, d), (m, n)
        assert inclusion_path(m, n, lambda s, e: mth(d[s:e])) == proof
        assert verify_inclusion(leaf_hash(d[m]), m, n, proof, root)
        assert not verify_inclusion(leaf_hash(d[m]), m, n, proof, mth(d + [b"other"]))
        if n > 1:
            assert not verify_inclusion(leaf_hash(d[m]), (m + 1) % n, n, proof, root)
            bad = list(proof)
            bad[-1] = bytes(32)
            assert not verify_inclusion(leaf_hash(d[m]), m, n, bad, root)
            assert not verify_inclusion(leaf_hash(d[m]), m, n, proof[:-1], root)


@pytest.mark.parametrize("n", range(1, 18))
def test_every_consistency_proof(store: LogStore, n: int) -> None:
    d = ENTRIES[:n]
    second = mth(d)
    for m in range(1, n + 1):
        first = mth(ENTRIES[:m])
        proof = store.consistency(m, n)
        assert proof == subproof(m, d, True), (m, n)
        assert consistency_path(m, n, lambda s, e: mth(d[s:e])) == proof
        assert verify_consistency(m, n, first, second, proof)
        if m < n:
            assert not verify_consistency(m, n, second, second, proof) or first == second
            assert not verify_consistency(m, n, first, first, proof)
            bad = list(proof)
            bad[0] = bytes(32)
            assert not verify_consistency(m, n, first, second, bad)
            assert not verify_consistency(m, n, first, second, [])


def test_proof_sizes_are_logarithmic(tmp_path) -> None:
    s = LogStore(tmp_path)
    n = 1000
    s.append([b'{"i":%d}' % i for i in range(n)])
    assert s.check_shape() == n
    assert max(len(s.inclusion(m, n)) for m in range(0, n, 37)) <= 10  # ceil(log2 1000)
    assert len(s.consistency(333, n)) <= 2 * 10


def test_rebuild_rederives_index_and_hashes(store: LogStore, tmp_path) -> None:
    copy = LogStore(tmp_path)
    copy.dir.mkdir(exist_ok=True)
    copy.entries_path.write_bytes(store.entries_path.read_bytes() + b'{"torn":')  # a torn last write is dropped
    assert copy.rebuild() == 17
    assert copy.root() == mth(ENTRIES)
    assert copy.entries(3, 5) == ENTRIES[3:5]
    for level in range(5):
        assert copy.level_path(level).read_bytes() == store.level_path(level).read_bytes()
