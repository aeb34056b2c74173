"""Releases as deltas: a release record holds what changed, the full manifest is rebuilt on demand.

A full manifest names every result and every leaderboard row, so a log of full manifests grows with
(results x releases), and so does the memory of whoever reads it. Since this format a release record
holds a *delta* (``format`` 2) against the release before it (docs/concepts.md, "Releases"):

- ``previous_manifest_sha256``: the previous record's ``manifest_sha256`` (so the records form a hash
  chain: a delta is signed together with what it applies to);
- ``results``: the result entries that are new or whose entry changed (status, successor,
  withdrawal), as the full manifest holds them; ``removed``: run ids no longer published;
- ``leaderboards``: the whole rows of each task whose board changed (one board's cost);
  ``leaderboards_removed``: tasks without a board any more;
- ``specs``: the task and model spec hashes that are new or changed; ``specs_removed``: those gone;
- ``demo`` and ``code_revision`` as in a full manifest.

The record's ``manifest`` field holds that delta: the bytes it is signed over and that
``manifest_sha256`` hashes, as for a full manifest. Earlier records (``format`` 1) keep their full
manifest and their ``manifest_sha256``. ``full_manifest`` rebuilds a release's full manifest: from
the nearest full record or snapshot before it, then its deltas in order. The publisher writes a
snapshot (``releases/manifests/<id>.json``, derived, rebuilt when missing) every ``SNAPSHOT_EVERY``
releases, so a rebuild reads one snapshot and at most ``SNAPSHOT_EVERY - 1`` deltas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from medbench.files import PUBLIC_FILE, atomic_write_bytes
from medbench.layout import DataDir

DELTA_FORMAT = 2
SNAPSHOT_EVERY = 64


def is_delta(body: Mapping[str, Any]) -> bool:
    return body.get("format") == DELTA_FORMAT


def _changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in after.items() if before.get(k) != v}


def build_delta(before: Mapping[str, Any], after: Mapping[str, Any], previous_sha256: str) -> dict[str, Any]:
    """The delta that turns the full manifest ``before`` into ``after`` (``apply_deltas`` inverts it)."""
    old = {e["run_id"]: e for e in before["results"]}
    new = {e["run_id"]: e for e in after["results"]}
    old_specs, new_specs = before["specs"], after["specs"]
    return {
        "format": DELTA_FORMAT, "release": after["release"], "previous_manifest_sha256": previous_sha256,
        "demo": after["demo"], "code_revision": after["code_revision"],
        "specs": {kind: _changed(old_specs[kind], new_specs[kind]) for kind in ("tasks", "models")},
        "specs_removed": {kind: sorted(set(old_specs[kind]) - set(new_specs[kind])) for kind in ("tasks", "models")},
        "results": [e for run_id, e in new.items() if old.get(run_id) != e],
        "removed": sorted(set(old) - set(new)),
        "leaderboards": _changed(before["leaderboards"], after["leaderboards"]),
        "leaderboards_removed": sorted(set(before["leaderboards"]) - set(after["leaderboards"])),
    }


def apply_deltas(base: Mapping[str, Any], deltas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The full manifest after applying ``deltas`` in order to the full manifest ``base``."""
    if not deltas:
        return dict(base)
    results = {e["run_id"]: e for e in base["results"]}
    boards = dict(base["leaderboards"])
    specs = {kind: dict(base["specs"][kind]) for kind in ("tasks", "models")}
    for d in deltas:
        for run_id in d["removed"]:
            results.pop(run_id, None)
        results.update((e["run_id"], e) for e in d["results"])
        for task in d["leaderboards_removed"]:
            boards.pop(task, None)
        boards.update(d["leaderboards"])
        for kind in ("tasks", "models"):
            for name in d["specs_removed"][kind]:
                specs[kind].pop(name, None)
            specs[kind].update(d["specs"][kind])
    last = deltas[-1]
    return {
        "format": 1, "release": last["release"], "demo": last["demo"], "code_revision": last["code_revision"],
        "specs": {kind: dict(sorted(specs[kind].items())) for kind in ("tasks", "models")},
        "results": [results[k] for k in sorted(results)],
        "leaderboards": dict(sorted(boards.items())),
    }


def snapshot_path(data: DataDir, release_id: str) -> Path:
    return data.release_log.parent / "manifests" / f"{release_id}.json"


def write_snapshot(data: DataDir, release_id: str, manifest: Mapping[str, Any]) -> None:
    atomic_write_bytes(snapshot_path(data, release_id), msgspec.json.encode(manifest), mode=PUBLIC_FILE)


def _snapshot(data: DataDir, release_id: str) -> dict[str, Any] | None:
    try:
        return msgspec.json.decode(snapshot_path(data, release_id).read_bytes())
    except (OSError, msgspec.DecodeError):
        return None  # derived: rebuilt from further back


def full_manifest(data: DataDir, chain: Sequence[Any]) -> dict[str, Any]:
    """The full manifest of ``chain[-1]``; ``chain``: the release records up to it, oldest first (each
    has ``id`` and ``manifest``: a full manifest or a delta)."""
    deltas: list[Mapping[str, Any]] = []
    for record in reversed(chain):
        if not is_delta(record.manifest):
            base = record.manifest
            break
        found = _snapshot(data, record.id)
        if found is not None:
            base = found
            break
        deltas.append(record.manifest)
    else:
        raise ValueError(f"release {chain[-1].id} is a delta with no full release before it")
    return apply_deltas(base, deltas[::-1])


__all__ = ["DELTA_FORMAT", "SNAPSHOT_EVERY", "apply_deltas", "build_delta", "full_manifest", "is_delta",
           "snapshot_path", "write_snapshot"]
