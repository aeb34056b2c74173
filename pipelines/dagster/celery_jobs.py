"""The evaluation jobs on dagster-celery workers: a second code location for production
(deploy/README.md, deploy/workspace-celery.yaml), over the same assets as ``definitions``.

Each step goes to a Celery queue chosen by its step key: ``<family>_predictions`` to ``predict``
(the workers that hold models: GPUs, API keys), everything else (snapshots, instances, metrics with
their bootstrap, checks, publish) to ``score`` (CPU workers). The routes are executor config, so the
assets stay as they are; a step tagged ``dagster-celery/queue`` keeps its tag's queue when no route
matches. Broker and result backend come from ``MEDBENCH_CELERY_BROKER`` / ``MEDBENCH_CELERY_BACKEND``
(e.g. ``redis://host:6379/0``). Workers: ``dagster-celery worker start -A dagster_celery.app
-y deploy/celery-worker.yaml -q predict`` (and ``-q score``), with the instance's DAGSTER_HOME and
MEDBENCH_DATA (a data directory every worker shares).

Needs the ``deploy`` extra (dagster-celery); ``definitions`` never imports this module.
"""

from __future__ import annotations

import dagster as dg
from dagster_celery.core_execution_loop import core_celery_execution_loop
from dagster_celery.executor import CELERY_CONFIG, CeleryExecutor, _submit_task

from pipelines.dagster.definitions import ASSETS, CHECKS, FAMILY_ASSETS
from pipelines.dagster.partitions import evaluation_job_name
from pipelines.dagster.private_api import retry_mode
from pipelines.dagster.resources import MedbenchResource

PREDICT_QUEUE = "predict"
SCORE_QUEUE = "score"


def queue_for(step_key: str, routes: dict[str, str], fallback: str) -> str:
    """The queue of the longest route that prefixes the step key, else the fallback."""
    matches = [prefix for prefix in routes if step_key.startswith(prefix)]
    return routes[max(matches, key=len)] if matches else fallback


class RoutedCeleryExecutor(CeleryExecutor):
    """dagster-celery's executor, with the queue of each step chosen by ``routes``."""

    def __init__(self, routes: dict[str, str], default_queue: str | None, **kwargs):
        super().__init__(**kwargs)
        self.routes = dict(routes)
        self.default_queue = default_queue

    def execute(self, plan_context, execution_plan):
        def submit(app, context, step, queue, priority, known_state):
            tagged = step.tags.get("dagster-celery/queue")
            fallback = tagged or self.default_queue or queue
            return _submit_task(app, context, step, queue_for(step.key, self.routes, fallback), priority,
                                known_state)

        return core_celery_execution_loop(plan_context, execution_plan, step_execution_fn=submit)


@dg.executor(
    name="medbench_celery",
    config_schema={
        **CELERY_CONFIG,
        "routes": dg.Field(dg.Map(str, str), default_value={},
                           description="step key prefix -> Celery queue (the longest matching prefix wins)"),
        "default_queue": dg.Field(dg.Noneable(str), default_value=None,
                                  description="the queue of steps no route matches (default: the app's)"),
    },
    requirements=dg.multiple_process_executor_requirements(),
)
def routed_celery_executor(init_context):
    cfg = init_context.executor_config
    return RoutedCeleryExecutor(
        routes=cfg["routes"], default_queue=cfg.get("default_queue"), broker=cfg.get("broker"),
        backend=cfg.get("backend"), config_source=cfg.get("config_source"), include=cfg.get("include"),
        retries=retry_mode(cfg["retries"]))


ROUTES = {fa.predictions: PREDICT_QUEUE for fa in FAMILY_ASSETS.values()}
executor = routed_celery_executor.configured({
    "broker": {"env": "MEDBENCH_CELERY_BROKER"},
    "backend": {"env": "MEDBENCH_CELERY_BACKEND"},
    "routes": ROUTES,
    "default_queue": SCORE_QUEUE,
}, name="medbench_celery_routed")

inputs_job = dg.define_asset_job("celery_inputs", selection=dg.AssetSelection.groups("snapshots", "instances"),
                                 executor_def=executor)
evaluation_jobs = [dg.define_asset_job(f"celery_{evaluation_job_name(name)}", selection=[fa.predictions, fa.metrics],
                                       executor_def=executor)
                   for name, fa in FAMILY_ASSETS.items()]
publish_job = dg.define_asset_job("celery_publish", selection=["published_warehouse"], executor_def=executor)

defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=CHECKS,
    jobs=[inputs_job, *evaluation_jobs, publish_job],
    resources={"medbench": MedbenchResource()},
)
