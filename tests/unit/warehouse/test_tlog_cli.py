"""``medbench log verify`` and ``medbench log rebuild`` (docs/cli.md "medbench log"): valid, then an
edited log found invalid, then a log restored from a backup rebuilt and found valid again; a log
shorter than a kept checkpoint is refused even after a rebuild."""

from __future__ import annotations

import shutil
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from support.commands import run_medbench
from warehouse.tlog.entries import release_entry
from warehouse.tlog.publisher import append
from warehouse.tlog.signer import Ed25519NoteSigner
from warehouse.tlog.store import LogStore

ORIGIN = "medbench.test/log"


def test_verify_and_rebuild(tmp_path: Path) -> None:
    data, kept = tmp_path / "data", tmp_path / "kept.checkpoint"
    store = LogStore.of_data(data)
    key = Ed25519NoteSigner(Ed25519PrivateKey.generate())
    append(store, [release_entry(f"r{i}", f"{i:064x}") for i in range(5)], key, ORIGIN, kept)
    backup = tmp_path / "backup"
    shutil.copytree(store.dir, backup)
    append(store, [release_entry("r5", f"{5:064x}")], key, ORIGIN, kept)

    done = run_medbench("log", "verify", "--checkpoint", str(kept), data=data)
    assert done.stdout.startswith(f"valid: 7 entries, checkpoint {ORIGIN} size 7 root ")

    store.entries_path.write_bytes(store.entries_path.read_bytes().replace(b'"r2"', b'"r9"'))
    done = run_medbench("log", "verify", data=data, check=False)
    assert done.returncode == 1 and "the log was edited" in done.stderr and len(done.stderr.splitlines()) == 1

    shutil.copy(backup / "entries.jsonl", store.entries_path)  # the backup is older than the kept checkpoint
    shutil.copy(backup / "checkpoint", store.checkpoint_path)
    done = run_medbench("log", "rebuild", "--checkpoint", str(kept), data=data, check=False)
    assert done.returncode == 1 and "truncated" in done.stderr

    done = run_medbench("log", "rebuild", data=data)  # on its own, the backup is a valid older log
    assert "rebuilt the index and hashes of 6 entries" in done.stdout and "valid: 6 entries" in done.stdout
