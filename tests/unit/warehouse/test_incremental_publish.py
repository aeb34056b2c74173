"""A publish builds the new file from the previous one plus the change (``warehouse.delta``).

The same history (a first publish, a new result, a result that supersedes another, a withdrawal) is
published into two data directories, one incrementally and one with every file built in full; after
each publish the two files hold byte-identical tables. A publish killed at any step of the
incremental build leaves the previous version served.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import msgspec
import pytest

from pipelines.engine.ranking import rank_rows
from support.api_data import RUNS, UTC, catalog, make_record, run_id
from warehouse import delta, publish as publishing
from warehouse.keys import load_key, sign_catalog
from medbench.layout import DataDir
from warehouse.read import current_version, open_current, read_ranks
from warehouse.releases import read_releases

SUPERSEDING = ("openai/gpt-oss-20b", "clinicalqa@0", 0.74, dt.date(2026, 10, 28),
               dt.datetime(2026, 10, 28, 9, tzinfo=UTC), "v2", False)
NEW_MODEL = ("hf/gpt-oss-20b", "clinicalqa@0", 0.5, dt.date(2026, 10, 25), dt.datetime(2026, 10, 25, 9, tzinfo=UTC),
             "v2", False)


def _steps(data: DataDir) -> list[publishing.Catalog]:
    """The catalogs of four publishes: the fixture, one new result, one superseding, a withdrawal."""
    first = catalog(data)
    added = catalog(data)
    added.results.append(make_record(data, "late-new-model", NEW_MODEL))
    superseding = catalog(data)
    superseding.results += [make_record(data, "late-new-model", NEW_MODEL),
                            make_record(data, "gptoss-cqa0-again", SUPERSEDING)]
    withdrawn = catalog(data)
    withdrawn.results += [make_record(data, "late-new-model", NEW_MODEL),
                          make_record(data, "gptoss-cqa0-again", SUPERSEDING)]
    withdrawn.withdrawn = {run_id("gptoss-cqa0-again"): {"reason": "leaked test items", "date": "2026-10-29"}}
    return [first, added, superseding, withdrawn]


def _publish(data: DataDir, cat: publishing.Catalog, step: int) -> str:
    import os

    from warehouse.keys import KEY_ENV

    day = dt.date(2026, 10, 29) + dt.timedelta(days=step)
    sign = sign_catalog(data, cat, load_key(Path(os.environ[KEY_ENV])), today=day)
    ranked = [r for r in cat.results if r.run_id not in cat.withdrawn]
    cat.ranks = rank_rows(data, ranked, cat.tasks, read_ranks(data))
    version, changed = publishing.publish(data, cat, now=dt.datetime.combine(day, dt.time(12), tzinfo=UTC), sign=sign)
    assert changed
    return version


def table_bytes(path: Path) -> dict[str, bytes]:
    """Every table and view of the file: its columns with their types, then its rows sorted, as bytes."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        names = [n for (n,) in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()]
        out = {}
        for name in names:
            cols = con.execute(f"DESCRIBE {name}").fetchall()
            rows = sorted(repr(row) for row in con.execute(f"SELECT * FROM {name}").fetchall())
            out[name] = msgspec.json.encode([[c[0], c[1]] for c in cols]) + msgspec.json.encode(rows)
        return out
    finally:
        con.close()


def test_incremental_files_equal_full_rebuilds(tmp_path: Path, monkeypatch) -> None:
    incremental, full = DataDir(tmp_path / "incremental"), DataDir(tmp_path / "full")
    applied = []
    real = delta.changed_results
    monkeypatch.setattr(delta, "changed_results", lambda *a: applied.append(1) or real(*a))
    for step, (a, b) in enumerate(zip(_steps(incremental), _steps(full))):
        version = _publish(incremental, a, step)
        with monkeypatch.context() as m:
            m.setattr(delta, "copy_previous", lambda *_: (_ for _ in ()).throw(delta.NotIncremental("full")))
            assert _publish(full, b, step) == version
        built, rebuilt = table_bytes(incremental.version_file(version)), table_bytes(full.version_file(version))
        assert built.keys() == rebuilt.keys() and "predictions_choice" in built
        for name in built:
            assert built[name] == rebuilt[name], f"publish {step}: table {name} differs"
    assert len(applied) == 3  # every publish after the first was incremental
    con = duckdb.connect(str(incremental.version_file(version)), read_only=True)
    try:
        statuses = dict(con.execute("SELECT run_id, status FROM results").fetchall())
        assert statuses[run_id("gptoss-cqa0-again")] == "withdrawn" and statuses[run_id("gptoss-cqa0")] == "current"
        assert con.execute("SELECT count(*) FROM releases").fetchone() == (4,)
        assert con.execute("SELECT count(DISTINCT run_id) FROM predictions").fetchone() == (len(RUNS) + 2,)
    finally:
        con.close()


def test_unchanged_runs_predictions_are_not_read_again(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    first, added = _steps(data)[:2]
    version = _publish(data, first, 0)
    before = table_bytes(data.version_file(version))["predictions_choice"]
    data.predictions_path(run_id("gptoss-cqa0")).write_bytes(b"not parquet: a full build would fail on it")
    newer = _publish(data, added, 1)
    con = duckdb.connect(str(data.version_file(newer)), read_only=True)
    try:
        kept = con.execute("SELECT count(*) FROM predictions_choice WHERE run_id = ?", [run_id("gptoss-cqa0")]).fetchone()
        assert kept == (40,)
        assert con.execute("SELECT count(*) FROM predictions_choice WHERE run_id = ?",
                           [run_id("late-new-model")]).fetchone() == (40,)
    finally:
        con.close()
    assert before != table_bytes(data.version_file(newer))["predictions_choice"]


class Killed(BaseException):
    """What a kill looks like to the code it interrupts."""


STEPS = [(delta, "copy_previous"), (delta, "changed_results"), (delta, "add_predictions"), (delta, "replace_specs"),
         (delta, "replace_results"), (delta, "replace_ranks"), (delta, "replace_baselines"),
         (delta, "append_releases"), (publishing, "append_release"), (publishing, "install")]


@pytest.mark.parametrize(("module", "name"), STEPS, ids=[name for _, name in STEPS])
def test_a_publish_killed_at_any_step_leaves_the_previous_version_served(tmp_path: Path, monkeypatch,
                                                                          module, name) -> None:
    data = DataDir(tmp_path / "data")
    first, added, again = _steps(data)[:3]
    version = _publish(data, first, 0)
    served = table_bytes(data.duckdb_link)

    def killed(*_args, **_kwargs):
        raise Killed(name)

    with monkeypatch.context() as m:
        m.setattr(module, name, killed)
        with pytest.raises(Killed):
            _publish(data, added, 1)
    assert current_version(data) == version
    assert table_bytes(data.duckdb_link) == served
    snapshot = open_current(data)  # the served version still opens and answers
    try:
        assert snapshot.version == version and snapshot.con.execute("SELECT count(*) FROM results").fetchone() == (len(RUNS),)
    finally:
        snapshot.close()
    assert not list(data.warehouse.glob("*.tmp*"))
    logged = [r.id for r in read_releases(data)]
    assert logged[0] == version and len(logged) == (2 if name == "install" else 1)
    newer = _publish(data, again, 2)  # the next publish goes through
    assert current_version(data) == newer != version
