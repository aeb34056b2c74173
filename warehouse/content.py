"""A version's content hash, kept as a sum of per-result digests so that a publish of a change
updates it at the change's cost (docs/concepts.md, "Versions and releases").

The content hash says whether two versions hold the same content (identical content keeps the current
version, and the version id ends in its first 8 hex digits). It used to be one SHA-256 over every
result, which made each publish read every result. Now it is taken over the specs and the sum, modulo
2**256, of one SHA-256 per result (its record, signature value and withdrawal) and one per baseline
comparison row. The sum does not depend on order and a change replaces its own terms: the sum is kept
in the version's ``meta`` (``results_sum``), and an incremental publish subtracts the terms of the
results it changes and adds their new ones (``warehouse.publish_change``), giving exactly the hash a
full build of the same state gives.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

MODULUS = 2**256


def canonical(value: Any) -> bytes:
    return msgspec.json.encode(msgspec.to_builtins(value), order="sorted")


def record_sha256(record: Any) -> str:
    """sha256 of the record's canonical JSON; for a result, of its published form (``generation_key``
    left out, ``warehouse.signing.published_record``), which the version's ``results.record`` holds, so
    the term a version added for a result can be taken out again from the file alone."""
    return hashlib.sha256(canonical(record)).hexdigest()


def stored_record_sha256(text: str) -> str:
    """``record_sha256`` of a published record as a version's ``results.record`` stores it (JSON text)."""
    return record_sha256(msgspec.json.decode(text))


def _int(tag: str, value: Any) -> int:
    return int.from_bytes(hashlib.sha256(canonical([tag, value])).digest(), "big")


def result_term(record_hash: str, signature_value: str | None, withdrawn: Mapping[str, Any] | None) -> int:
    """One result's term of the sum."""
    return _int("result", [record_hash, signature_value, dict(withdrawn) if withdrawn else None])


def baseline_term(row: Mapping[str, Any]) -> int:
    """One baseline comparison row's term of the sum."""
    return _int("baseline", dict(row))


def total(terms: Iterable[int], start: int = 0) -> int:
    return (start + sum(terms)) % MODULUS


def as_hex(value: int) -> str:
    return f"{value % MODULUS:064x}"


def specs_sha256(datasets: list[dict[str, Any]], tasks: list[dict[str, Any]]) -> str:
    """sha256 of the datasets' and tasks' rows: an incremental publish needs them unchanged (ranks and
    baselines of every task depend on its spec)."""
    return hashlib.sha256(canonical({"datasets": datasets, "tasks": tasks})).hexdigest()


def content_hash(datasets: list[dict[str, Any]], tasks: list[dict[str, Any]], models: list[dict[str, Any]],
                 demo: bool, results_sum: int) -> str:
    body = {"datasets": datasets, "tasks": tasks, "models": sorted(models, key=lambda m: m["slug"]), "demo": demo,
            "results": as_hex(results_sum)}
    return hashlib.sha256(canonical(body)).hexdigest()


__all__ = [
    "MODULUS",
    "as_hex",
    "baseline_term",
    "canonical",
    "content_hash",
    "record_sha256",
    "result_term",
    "specs_sha256",
    "stored_record_sha256",
    "total",
]
