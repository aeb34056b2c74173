"""``publish_results()`` publishes a change at the change's cost (``pipelines.engine.release_change``).

The fixture's results are written as finished runs (result.json and predictions) and published with
the real ``publish_results()`` and the checkout's specs. Then a new result, one that supersedes another and a
withdrawal are each published through the incremental path; after each, a copy of the data directory
is published again through the whole-catalog path, and both files hold byte-identical tables (the
same content hash included). A publish killed at any step of the incremental path leaves the
previous version served, and the next publish goes through.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import msgspec
import pytest
from support.api_data import RUNS, UTC, make_record, run_id
from support.plugins import specs as load_specs

from pipelines.engine import release_change as change_module
from pipelines.engine.release import publish_results
from tests.unit.warehouse.test_incremental_publish import (
    NEW_MODEL,
    SUPERSEDING,
    table_bytes,
)
from warehouse import delta, publish_change
from medbench.layout import DataDir
from warehouse.read import current_version, read_meta
from warehouse.releases import find_release, manifest_of, read_releases
from warehouse.withdrawals import withdraw

SPECS = Path(__file__).resolve().parents[3] / "specs"
HISTORY = ["kept", "late-new-model", "gptoss-cqa0-again", "withdrawal"]


def _finish(data: DataDir, label: str, spec: tuple) -> str:
    record = make_record(data, label, spec)
    (data.artifacts / record.run_id / "result.json").write_bytes(msgspec.json.encode(record))
    return record.run_id


def _step(data: DataDir, step: str) -> None:
    if step == "kept":
        for label, spec in RUNS.items():
            _finish(data, label, spec)
    elif step == "late-new-model":
        _finish(data, step, NEW_MODEL)
    elif step == "gptoss-cqa0-again":
        _finish(data, step, SUPERSEDING)
    else:
        withdraw(data, run_id("gptoss-cqa0-again"), "leaked test items", now=dt.datetime(2026, 10, 29, tzinfo=UTC))


def _release(data: DataDir) -> str:
    version, _, _ = publish_results(load_specs(SPECS), data, lambda _line: None)
    return version


def _comparable(path: Path) -> dict[str, bytes]:
    """Every table but the release history (a rebuild appends its own release) and ``meta`` (compared
    less the rows naming the version and its time, ``_meta``)."""
    tables = table_bytes(path)
    del tables["releases"], tables["meta"]
    return tables


def _meta(data: DataDir, version: str) -> dict[str, str]:
    meta = read_meta(data, version)
    return {k: v for k, v in meta.items() if k not in ("warehouse_version", "published_at", "listed_at")}


@pytest.fixture
def spied(monkeypatch) -> list[str]:
    applied: list[str] = []
    real = change_module.publish_change
    monkeypatch.setattr(change_module, "publish_change",
                        lambda data, change, **kw: applied.append(change.touched) or real(data, change, **kw))
    return applied


def test_incremental_releases_equal_whole_catalog_releases(tmp_path: Path, monkeypatch, spied) -> None:
    data = DataDir(tmp_path / "data")
    for number, step in enumerate(HISTORY):
        _step(data, step)
        version = _release(data)
        if number == 0:
            continue
        rebuilt = DataDir(tmp_path / f"full-{number}")
        shutil.copytree(data.root, rebuilt.root, symlinks=True)
        shutil.rmtree(rebuilt.warehouse)
        with monkeypatch.context() as m:
            m.setattr(change_module, "release_change", lambda *_a, **_k: None)
            full = _release(rebuilt)
        assert _meta(data, version) == _meta(rebuilt, full), f"after {step}: another content hash"
        built, whole = _comparable(data.version_file(version)), _comparable(rebuilt.version_file(full))
        assert built.keys() == whole.keys() and "baseline_comparisons" in built
        for name in built:
            assert built[name] == whole[name], f"after {step}: table {name} differs"
    # every publish after the first went through the change, touching the task it changed only
    assert spied == [["clinicalqa@0"], ["clinicalqa@0"], ["clinicalqa@0"]]
    records = read_releases(data)
    assert [r.manifest["format"] for r in records] == [1, 2, 2, 2]
    last = manifest_of(data, find_release(data, records[-1].id))
    status = {e["run_id"]: e["status"] for e in last["results"]}
    assert status[run_id("gptoss-cqa0-again")] == "withdrawn" and status[run_id("gptoss-cqa0")] == "current"
    assert len(last["results"]) == len(RUNS) + 2


def test_a_rewritten_result_is_republished(tmp_path: Path, spied) -> None:
    """``--force`` writes result.json again under the same run id: the next publish serves the new record."""
    from warehouse.read import result_by_id

    data = DataDir(tmp_path / "data")
    _step(data, "kept")
    first = _release(data)
    path = data.artifacts / run_id("random-cqa0") / "result.json"
    record = msgspec.json.decode(path.read_bytes())
    record["usage"]["wall_seconds"] = 99.5
    path.write_bytes(msgspec.json.encode(record))
    version = _release(data)
    assert version != first and spied == [["clinicalqa@0"]]
    assert result_by_id(data, run_id("random-cqa0")).record.usage.wall_seconds == 99.5


def test_an_unchanged_board_keeps_its_version(tmp_path: Path, spied) -> None:
    data = DataDir(tmp_path / "data")
    _step(data, "kept")
    first = _release(data)
    assert _release(data) == first and current_version(data) == first
    assert spied == [[]]


def test_a_new_result_on_one_task_reads_no_other_tasks_result(tmp_path: Path, monkeypatch, spied) -> None:
    data = DataDir(tmp_path / "data")
    _step(data, "kept")
    _release(data)
    other = data.artifacts / run_id("neglastmap-ioh0") / "result.json"
    other.write_bytes(b"not a record: a publish that read every result would fail on it")
    os.utime(other, ns=(0, 0))  # as old as it was: only files written since the last listing are read
    _step(data, "late-new-model")
    version = _release(data)
    assert current_version(data) == version and spied == [["clinicalqa@0"]]


class Killed(BaseException):
    """What a kill looks like to the code it interrupts."""


STEPS = [(delta, "copy_previous"), (delta, "add_predictions"), (delta, "replace_specs"), (delta, "replace_results"),
         (delta, "replace_ranks"), (delta, "replace_baselines"), (delta, "append_releases"),
         (publish_change, "append_release"), (publish_change, "install")]


@pytest.mark.parametrize(("module", "name"), STEPS, ids=[name for _, name in STEPS])
def test_an_incremental_release_killed_at_any_step_leaves_the_previous_version_served(
        tmp_path: Path, monkeypatch, spied, module, name) -> None:
    data = DataDir(tmp_path / "data")
    _step(data, "kept")
    version = _release(data)
    served = table_bytes(data.duckdb_link)
    _step(data, "late-new-model")

    def killed(*_args, **_kwargs):
        raise Killed(name)

    with monkeypatch.context() as m:
        m.setattr(module, name, killed)
        with pytest.raises(Killed):
            _release(data)
    assert current_version(data) == version and table_bytes(data.duckdb_link) == served
    assert not list(data.warehouse.glob("*.tmp*"))
    newer = _release(data)  # the next publish goes through, still incrementally
    assert current_version(data) != version and current_version(data) == newer
    assert spied[-1] == ["clinicalqa@0"]
