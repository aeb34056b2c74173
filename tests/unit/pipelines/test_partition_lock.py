"""The partition lock and the generation store's one-output-per-id rule (fast units; the
two-process end-to-end check is tests/faults/test_one_evaluation.py)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from pipelines.engine.generations import DuplicateGeneration, Generation, GenerationStore
from pipelines.engine.locks import evaluation_lock, lock_path
from medbench.layout import DataDir


def test_a_second_taker_waits_and_says_for_whom(tmp_path: Path) -> None:
    data = DataDir(tmp_path)
    lines: list[str] = []
    entered = threading.Event()
    release = threading.Event()

    def first() -> None:
        with evaluation_lock(data, "abc123abc123", lambda _: None):
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=first)
    thread.start()
    assert entered.wait(10)
    threading.Timer(0.3, release.set).start()
    with evaluation_lock(data, "abc123abc123", lines.append) as held:
        assert held.waited
    thread.join()
    assert "waiting for it" in lines[0] and "pid " in lines[0] and "host " in lines[0]
    assert lock_path(data, "abc123abc123").exists()
    with evaluation_lock(data, "abc123abc123", lines.append) as held:
        assert not held.waited


def test_appending_an_id_already_stored_is_an_error(tmp_path: Path) -> None:
    store = GenerationStore(tmp_path / "g.jsonl")
    store.append([Generation("1", "A"), Generation("2", "B")])
    with pytest.raises(DuplicateGeneration, match="1 instance ids already stored"):
        GenerationStore(tmp_path / "g.jsonl").append([Generation("2", "C")])
    with pytest.raises(DuplicateGeneration):
        store.append([Generation("3", "C"), Generation("3", "D")])  # twice within one chunk
    store.append([Generation("3", "C")])
    assert [g.output for g in store.load().values()] == ["A", "B", "C"]


def test_a_file_with_an_id_twice_keeps_the_first_and_warns(tmp_path: Path, caplog) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text('{"instance_id":"1","output":"A"}\n{"instance_id":"1","output":"B"}\n')
    with caplog.at_level(logging.WARNING):
        loaded = GenerationStore(path).load()
    assert loaded["1"].output == "A"
    assert "1 instance ids more than once" in caplog.text


def test_a_stale_name_in_the_lock_file_is_not_reported_as_the_holder(tmp_path: Path) -> None:
    """The lock file still names a finished holder until the new one writes its own name: the waiter
    must wait for a live name (the CI failure: it named a dead pid from the copied demo data)."""
    import json
    import os
    import socket
    import subprocess
    import sys

    from pipelines.engine.locks import holder_text

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    path = tmp_path / "x.lock"
    path.write_text(json.dumps({"host": socket.gethostname(), "pid": int(dead.stdout), "since": "then"}))
    live = {"host": socket.gethostname(), "pid": os.getpid(), "since": "now"}
    threading.Timer(0.3, lambda: path.write_text(json.dumps(live))).start()
    assert holder_text(path) == f"host {live['host']}, pid {os.getpid()}, since now"
    path.write_text("")
    assert holder_text(path, settle_s=0.1) == "an unknown holder"
