"""The ``evaluate_all`` job: the CLI's path in one Dagster run, for the UI. Over the demo's finished
results with one result removed, it reuses the rest without a run each, runs only the missing
partition as its own tagged ``evaluate_vitaldb_ioh`` run, skips what cannot run here, publishes,
and says so in its output metadata; a bad selection fails the run with one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from pipelines.dagster.definitions import defs
from support.paths import REPO
from tests.e2e.test_materialize import results_table

PAIR = ("vitaldb-ioh@0", "medbench/neg-last-map")


@pytest.fixture
def setting(demo_data, tmp_path, monkeypatch) -> tuple[Path, Path]:
    data = tmp_path / "data"
    shutil.copytree(demo_data, data, ignore=shutil.ignore_patterns("dagster"))
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(REPO / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("MEDBENCH_DATA", str(data))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return data, home


def _output_metadata(result) -> dict:
    event = next(e for e in result.all_events if e.event_type_value == "STEP_OUTPUT")
    return {k: v.value for k, v in event.event_specific_data.metadata.items()}


@pytest.mark.slow
def test_evaluate_all_reuses_without_runs_and_runs_only_what_is_missing(setting):
    data, home = setting
    before = results_table(data)
    missing = next(rid for rid, row in before.items() if (row[0], row[1]) == PAIR)
    shutil.move(data / "artifacts" / missing, data.parent / "moved-aside")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        result = defs.resolve_job_def("evaluate_all").execute_in_process(instance=instance, raise_on_error=False)
        assert result.success, [e.message for e in result.all_events if e.is_failure]
        meta = _output_metadata(result)
        assert meta["ran"] == 1 and meta["reused"] == len(before) - 1, meta
        assert meta["published_version"] != "(unchanged)"
        runs = {r.job_name: r for r in instance.get_runs()}
        evaluation = instance.get_runs(filters=dg.RunsFilter(job_name="evaluate_vitaldb_ioh"))
    # one run for the missing partition (its pool tagged), none for the reused ones; then the publish
    assert [r.tags["dagster/partition"] for r in evaluation] == ["|".join(PAIR)]
    assert evaluation[0].tags["medbench/pool"] == "cpu" and evaluation[0].status == dg.DagsterRunStatus.SUCCESS
    assert {"evaluate_all", "evaluate_vitaldb_ioh", "publish"} <= set(runs)
    assert "evaluate_clinicalqa" not in runs
    assert results_table(data) == before  # the same run id and numbers again, published


def test_a_bad_selection_fails_the_run_with_one_line(setting):
    _, home = setting
    config = {"ops": {"evaluate_selection": {"config": {"models": ["nobody/none"]}}}}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        result = defs.resolve_job_def("evaluate_all").execute_in_process(
            instance=instance, run_config=config, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    message = failure.step_failure_data.user_failure_data.description
    assert message.startswith("unknown model 'nobody/none'") and "\n" not in message
