"""A third party checks an inclusion proof and a consistency proof between two checkpoints with only
``hashlib`` and ``cryptography``, by the recipe printed in docs/transparency-log.md.

The recipe is read from the page (the block after ``<!-- third-party-log-check -->``) and run in an
isolated interpreter (``python -I``, another working directory) that must end without having
imported any module of medbench; then a forged entry, a proof against a rewritten log, and a
checkpoint signed by another key must each make it fail."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from support.paths import REPO
from warehouse.tlog.checkpoint import sign_checkpoint
from warehouse.tlog.entries import release_entry, result_entry
from warehouse.tlog.publisher import append
from warehouse.tlog.reader import open_view
from warehouse.tlog.signer import Ed25519NoteSigner
from warehouse.tlog.store import LogStore

ORIGIN = "medbench.example.org/log"
MARKER = "<!-- third-party-log-check -->"
GUARD = """
import runpy, sys
sys.argv = ["check_log.py", sys.argv[1]]
runpy.run_path("check_log.py", run_name="__main__")
mine = sorted(m for m in sys.modules if m.split(".")[0] in {"warehouse", "api", "pipelines", "medbench"})
assert not mine, f"the recipe imported medbench: {mine}"
"""


def recipe() -> str:
    page = (REPO / "docs" / "transparency-log.md").read_text(encoding="utf-8")
    after = page.split(MARKER, 1)[1].lstrip("\n")
    assert after.startswith("```python\n"), "the marker must be followed by a python block"
    return after[len("```python\n"):].split("\n```", 1)[0] + "\n"


@pytest.fixture()
def bundle(tmp_path: Path) -> dict:
    data = tmp_path / "data"
    store = LogStore.of_data(data)
    key = Ed25519NoteSigner(Ed25519PrivateKey.generate())
    kept = tmp_path / "keys" / "log.checkpoint"
    digest = lambda s: hashlib.sha256(s.encode()).hexdigest()  # noqa: E731
    old = append(store, [result_entry(f"{i:012x}", digest(f"r{i}")) for i in range(6)], key, ORIGIN, kept)
    append(store, [result_entry(f"{i:012x}", digest(f"r{i}")) for i in range(6, 11)]
           + [release_entry("2026-12-07T05:00:00Z-0badcafe", digest("m"))], key, ORIGIN, kept)
    view = open_view(data)
    return {"public_key": base64.b64encode(key.public_key).decode(), "origin": ORIGIN,
            "old_checkpoint": old.note, "proof": view.proof_body("result", f"{3:012x}"),
            "consistency": view.consistency_body(old.size, None), "_key": key, "_view": view}


def check(tmp_path: Path, bundle: dict) -> subprocess.CompletedProcess:
    work = tmp_path / "third-party"
    work.mkdir(exist_ok=True)
    (work / "check_log.py").write_text(recipe(), encoding="utf-8")
    (work / "bundle.json").write_text(json.dumps({k: v for k, v in bundle.items() if not k.startswith("_")}))
    return subprocess.run([sys.executable, "-I", "-c", GUARD, "bundle.json"], cwd=work, capture_output=True,
                          text=True, timeout=60)


def test_recipe_verifies_inclusion_and_consistency(tmp_path: Path, bundle: dict) -> None:
    assert bundle["consistency"]["from"] == 7 and bundle["consistency"]["to"] == 13  # first key + 6, then + 6
    done = check(tmp_path, bundle)
    assert done.returncode == 0, done.stderr
    assert "included at 4 of 13; consistent with the checkpoint of 7" in done.stdout


def test_recipe_refuses_a_forged_entry(tmp_path: Path, bundle: dict) -> None:
    forged = copy.deepcopy(bundle)
    real, fake = (hashlib.sha256(s.encode()).hexdigest() for s in ("r3", "another record"))
    assert real in forged["proof"]["entry"]
    forged["proof"]["entry"] = forged["proof"]["entry"].replace(real, fake)
    forged["proof"]["leaf_hash"] = hashlib.sha256(b"\x00" + forged["proof"]["entry"].encode()).hexdigest()
    done = check(tmp_path, forged)
    assert done.returncode != 0 and "the entry is not in the log" in done.stderr


def test_recipe_refuses_a_log_that_does_not_extend_the_old_checkpoint(tmp_path: Path, bundle: dict) -> None:
    forked = copy.deepcopy(bundle)
    forked["consistency"]["hashes"][0] = "00" * 32
    done = check(tmp_path, forked)
    assert done.returncode != 0 and "does not extend" in done.stderr


def test_recipe_refuses_a_checkpoint_of_another_key(tmp_path: Path, bundle: dict) -> None:
    view = bundle["_view"]
    stranger = Ed25519NoteSigner(Ed25519PrivateKey.generate())
    other = copy.deepcopy(bundle)
    other["proof"]["checkpoint"]["note"] = sign_checkpoint(ORIGIN, view.size, view.store.root(view.size),
                                                           [stranger]).note
    done = check(tmp_path, other)
    assert done.returncode != 0 and "no signature by the pinned key" in done.stderr
