"""The code location is ``build_definitions(specs)``, a factory that reads and writes nothing: the
jobs and sensors come from two lists (``jobs``, ``sensors``), the one place a new one is added."""

import dagster as dg

from pipelines.dagster.definitions import build, build_definitions, defs, jobs, sensors
from pipelines.dagster.partitions import evaluation_job_name
from support.plugins import specs as load_specs


def test_the_factory_makes_every_job_and_sensor_from_its_lists(tmp_path, monkeypatch):
    data = tmp_path / "nowhere"
    monkeypatch.setenv("MEDBENCH_DATA", str(data))
    specs = load_specs()
    made = build_definitions(specs)
    assert not data.exists()  # building touched no data directory
    built = build(specs)
    job_names = {j.name for j in jobs(built)}
    assert {"materialize_inputs", "publish", "evaluate_all", "withdraw_result", "review_submission", "run_official_submission"} | {
        evaluation_job_name(f) for f in built.families} == job_names
    assert {j.name for j in made.resolve_all_job_defs()} >= job_names
    assert {s.name for s in made.sensors} == {s.name for s in sensors(built, jobs(built))} == {
        "evaluation_partitions_sensor", "dead_runs_sensor", "publish_on_new_results", "submissions",
        "submission_run_failures"}


def test_the_code_location_is_the_factory_over_the_installed_specs():
    assert {j.name for j in defs.resolve_all_job_defs()} >= {"evaluate_all", "publish", "materialize_inputs"}
    assert isinstance(defs.resources["medbench"], dg.ConfigurableResource)
