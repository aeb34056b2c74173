"""The Dagster definitions as a pure factory, ``build_definitions(specs)``, and the code location
(``dagster dev -w workspace.yaml`` loads ``defs``, the factory over the installed plug-ins' specs).

The assets are made per dataset and per task family of the specs' plug-ins (``specs.plugins``;
``plugins.py`` chooses them: this module's last lines are the composition root), through
``engine_calls``, with code versions from the specs as loaded when the code location loads (reload
it in the UI after editing a spec). Adding a job or a sensor: append it in ``jobs`` or ``sensors``. Jobs: ``materialize_inputs`` (every snapshot and instances asset),
``evaluate_<family>`` (one family's partitioned predictions and metrics; one job per family since
each family has its own partitions), ``publish``, and ``evaluate_all`` (rule one for a selection, then its
partitions' runs submitted to the instance, ``evaluate_all.py``); each has a description the UI shows.
The ``publish_on_new_results`` sensor runs ``publish`` after new metrics, so a UI run ends in the
warehouse without a second click, and every run shows under a named job (an asset's automation
condition would launch as Dagster's implicit ``__ASSET_JOB``). The evaluation assets have a single-run backfill
policy: a UI backfill is one ranged run per family, rule one first (``assets/ranged.py``).
"""

from __future__ import annotations

import dagster as dg

from pipelines.dagster.building import Built, FamilyAssets, build, named_jobs, resolved_jobs  # noqa: F401  (re-exported)
from pipelines.dagster.evaluate_all import evaluate_all_job
from pipelines.dagster.withdraw_job import withdraw_result_job
from pipelines.dagster.partitions import evaluation_job_name
from pipelines.dagster.resources import MedbenchResource
from pipelines.dagster.sensors import dead_runs_sensor, evaluation_partitions_sensor, publish_sensor
from pipelines.dagster.submission_jobs import (
    review_submission,
    run_official_submission,
    submission_run_failures,
    submissions_sensor,
)
from pipelines.orchestration.plugins import specs as load_specs
from pipelines.dagster.engine_calls import Specs


def jobs(built: Built) -> list:
    """Every job of the code location. A new job (e.g. a Dagster job of another feature) is added here."""
    return [*named_jobs(built.families), evaluate_all_job, withdraw_result_job, review_submission,
            run_official_submission]


def sensors(built: Built, all_jobs: list) -> list[dg.SensorDefinition]:
    """Every sensor of the code location; ``all_jobs``: what ``jobs(built)`` returned. A new sensor is added here.

    Publishing follows new results without a click: a sensor on the ``publish`` job (on by default,
    so the daemon publishes as soon as a metrics partition lands), so the run shows under that job."""
    by_name = {job.name: job for job in all_jobs}
    publish_automation = publish_sensor(
        by_name["publish"], [dg.AssetKey.from_user_string(fa.metrics) for fa in built.families.values()],
        [*(evaluation_job_name(name) for name in built.families), evaluate_all_job.name])
    # approved submissions become spec files and evaluation runs, approved official ones a
    # run_official_submission run of their package in the sandbox (submission_jobs.py)
    submissions_automation = submissions_sensor([by_name[evaluation_job_name(name)] for name in built.families])
    return [evaluation_partitions_sensor, dead_runs_sensor, publish_automation, submissions_automation,
            submission_run_failures]


def build_definitions(specs: Specs, resources: dict | None = None, built: Built | None = None) -> dg.Definitions:
    """The pure factory: the code location's assets, checks, jobs, sensors and resources for ``specs``
    (whose plug-in registry, ``specs.plugins``, supplies the families, datasets and backends).
    Reads and writes nothing; ``resources`` default to the environment's data and specs folders."""
    built = built or build(specs)
    all_jobs = jobs(built)
    return dg.Definitions(
        assets=built.assets,
        asset_checks=built.checks,
        jobs=all_jobs,
        sensors=sensors(built, all_jobs),
        resources=resources or {"medbench": MedbenchResource()},
        # In-process for the UI's asset runs too ("Materialize", backfills): a run is one partition's
        # steps, so a subprocess per step only adds seconds; parallelism is across runs (the instance's
        # run queue and pools, deploy/), not across the steps of one run.
        executor=dg.in_process_executor,
    )


# The code location (``workspace.yaml``): the factory over the installed plug-ins' specs, as loaded
# when the code location loads (reload it in the UI after editing a spec).
SPECS = load_specs()
BUILT = build(SPECS)
ASSETS, CHECKS, FAMILY_ASSETS = BUILT.assets, BUILT.checks, BUILT.families
JOBS = named_jobs(FAMILY_ASSETS)  # the asset jobs alone, as the CLI runs them
defs = build_definitions(SPECS, built=BUILT)
