"""RFC 6962 Merkle tree hashing, and RFC 9162 inclusion and consistency proofs.

Why: anyone holding a signed checkpoint (a tree size and its root hash) can check, in O(log n)
hashes, that an entry is in the log (an inclusion proof) and that a later log extends the earlier
one without rewriting it (a consistency proof) — the guarantee Certificate Transparency gives
(docs/transparency-log.md).

Hashing and shape are RFC 6962 §2.1's: a leaf hash is ``SHA-256(0x00 || entry)``, an interior node
``SHA-256(0x01 || left || right)``; a tree of n > 1 leaves is split at k, the largest power of two
smaller than n, into a left subtree of k leaves and a right one of n - k: no node is ever
duplicated. The empty tree's hash is ``SHA-256()``.

Proof generation follows RFC 9162 §2.1.3.1 (PATH) and §2.1.4.1 (PROOF/SUBPROOF) over a
``subtree(start, end)`` callable that answers the hash of leaves ``[start, end)``: the store
answers it from its kept subtree hashes, so a proof costs O(log n) reads. Verification is RFC 9162
§2.1.3.2 and §2.1.4.2, step for step, and needs nothing but hashlib.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

Subtree = Callable[[int, int], bytes]  # (start, end) -> MTH(D[start:end])


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split_point(n: int) -> int:
    """k, the largest power of two smaller than n (n > 1)."""
    if n < 2:
        raise ValueError(f"a tree of {n} leaves has no split")
    return 1 << ((n - 1).bit_length() - 1)


def perfect_subtrees(start: int, end: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut the way RFC 6962 cuts a tree whose leaves start at ``start`` (a multiple
    of a power of two at least as large as the range's left part): full, aligned subtrees of
    decreasing size, left to right. Their hashes, folded from the right, give MTH of the range."""
    parts = []
    while end - start > 0:
        n = end - start
        size = n if n & (n - 1) == 0 else split_point(n)
        parts.append((start, start + size))
        start += size
    return parts


def inclusion_path(index: int, size: int, subtree: Subtree) -> list[bytes]:
    """PATH(index, D[size]) of RFC 9162 §2.1.3.1: sibling hashes from the leaf up."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size}")
    path: list[bytes] = []
    start, end = 0, size
    while end - start > 1:
        k = split_point(end - start)
        if index < start + k:
            path.append(subtree(start + k, end))
            end = start + k
        else:
            path.append(subtree(start, start + k))
            start += k
    path.reverse()
    return path


def consistency_path(first: int, second: int, subtree: Subtree) -> list[bytes]:
    """PROOF(first, D[second]) of RFC 9162 §2.1.4.1 (SUBPROOF with b = true); empty when first == second."""
    if not 0 < first <= second:
        raise ValueError(f"no consistency proof from {first} to {second}: need 0 < from <= to")
    proof: list[bytes] = []
    start, end, m, complete = 0, second, first, True
    while True:
        n = end - start
        if m == n:
            if not complete:
                proof.append(subtree(start, end))
            break
        k = split_point(n)
        if m <= k:
            proof.append(subtree(start + k, end))
            end = start + k
        else:
            proof.append(subtree(start, start + k))
            start, m, complete = start + k, m - k, False
    proof.reverse()
    return proof


def root_of_leaves(leaves: Sequence[bytes]) -> bytes:
    """MTH of a list of leaf hashes, in memory (for small trees and rebuilding)."""
    if not leaves:
        return EMPTY_ROOT
    level = list(leaves)
    # fold complete pairs level by level; an odd last node is promoted unchanged (RFC 6962 shape)
    while len(level) > 1:
        nxt = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def _shift_until_lsb_or_zero(fn: int, sn: int) -> tuple[int, int]:
    while fn & 1 == 0 and fn != 0:
        fn, sn = fn >> 1, sn >> 1
    return fn, sn


def verify_inclusion(leaf: bytes, index: int, size: int, path: Sequence[bytes], root: bytes) -> bool:
    """RFC 9162 §2.1.3.2: whether ``path`` proves the leaf hash ``leaf`` at ``index`` in the tree
    of ``size`` leaves whose root is ``root``."""
    if index >= size or index < 0:
        return False
    fn, sn = index, size - 1
    r = leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                fn, sn = _shift_until_lsb_or_zero(fn, sn)
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes,
                       path: Sequence[bytes]) -> bool:
    """RFC 9162 §2.1.4.2: whether ``path`` proves that the tree of ``second`` leaves with root
    ``second_root`` extends the tree of ``first`` leaves with root ``first_root``. Equal sizes
    need an empty proof and equal roots (the RFC's algorithm covers 0 < first < second)."""
    if first == second:
        return not path and first_root == second_root
    if not 0 < first < second or not path:
        return False
    path = list(path)
    if first & (first - 1) == 0:
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                fn, sn = _shift_until_lsb_or_zero(fn, sn)
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == first_root and sr == second_root and sn == 0


__all__ = ["EMPTY_ROOT", "HASH_SIZE", "Subtree", "consistency_path", "inclusion_path", "leaf_hash", "node_hash",
           "perfect_subtrees", "root_of_leaves", "split_point", "verify_consistency", "verify_inclusion"]
