"""Driving Dagster from the command line: select partitions, run them in-process, report.

Used by ``medbench materialize``, ``medbench demo`` and ``medbench eval``. Every run goes through
the Dagster instance of the data directory, so the UI shows the same history as the CLI.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.engine.specs import ModelSpec, Specs, TaskSpec, load_specs
from warehouse.layout import DataDir, DataKindError

REPO_ROOT = Path(__file__).resolve().parents[2]
# The CLI shows Dagster's INFO lines (our progress and results), not its DEBUG event stream.
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


class MaterializeError(RuntimeError):
    """A selection or setup problem; the message says what to change."""


@dataclass
class Outcome:
    partition: str
    status: str  # ran | reused | skipped | failed
    run_id: str = ""
    detail: str = ""


@dataclass
class Report:
    data: DataDir
    outcomes: list[Outcome] = field(default_factory=list)
    version: str = ""
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and all(o.status != "failed" for o in self.outcomes)

    def outcome(self, task_ref: str, model_slug: str) -> Outcome | None:
        """The outcome of the (task version, model) partition, or None when the report has none."""
        from pipelines.dagster.engine_calls import partition_key

        key = partition_key(task_ref, model_slug)
        return next((o for o in self.outcomes if o.partition == key), None)

    def render(self) -> str:
        lines = [f"{'evaluation':48} {'status':8} {'run_id':12}  detail"]
        lines += [f"{o.partition:48} {o.status:8} {o.run_id:12}  {o.detail}" for o in self.outcomes]
        lines += [f"error: {e}" for e in self.errors]
        if self.version:
            lines.append(f"published warehouse {self.version}: {self.data.duckdb_link}")
        return "\n".join(lines)


def prepare_dagster_home(data: DataDir) -> Path:
    """DAGSTER_HOME defaults to <data>/dagster, seeded with the checkout's dagster.yaml."""
    home = Path(os.environ.get("DAGSTER_HOME") or data.root / "dagster")
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    if not target.exists():
        shutil.copyfile(REPO_ROOT / "dagster.yaml", target)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def select(specs: Specs, tasks: list[str], models: list[str]) -> list[tuple[TaskSpec, ModelSpec]]:
    try:
        task_refs = {specs.task(t).ref for t in tasks}
        model_slugs = {specs.model(m).slug for m in models}
    except KeyError as exc:
        raise MaterializeError(exc.args[0]) from None
    pairs = [(t, m) for t, m in specs.evaluations()
             if (not task_refs or t.ref in task_refs) and (not model_slugs or m.slug in model_slugs)]
    if not pairs:
        raise MaterializeError(
            f"no evaluation matches tasks={tasks or 'all'} models={models or 'all'}: a model is evaluated only "
            "on the tasks its spec lists (specs/models/<provider>/<name>.toml, key `tasks`)")
    return pairs


def materialize_selection(demo: bool, tasks: list[str] = (), models: list[str] = (), force: bool = False,
                          data: DataDir | None = None) -> Report:
    import dagster as dg

    from pipelines.backends.registry import not_runnable_reason
    from pipelines.dagster.definitions import build
    from pipelines.dagster.engine_calls import existing_result, family_of, plan
    from pipelines.dagster.partitions import sync_evaluation_partitions
    from pipelines.dagster.resources import MedbenchResource

    data = data or DataDir()
    try:
        data.claim("demo" if demo else "real")
    except DataKindError as exc:
        raise MaterializeError(str(exc)) from None
    specs = load_specs()
    pairs = select(specs, list(tasks), list(models))
    prepare_dagster_home(data)
    resources = {"medbench": MedbenchResource(data_dir=str(data.root))}
    report = Report(data=data)
    # Built now, not at import: a family registered at runtime (a plug-in, a test) gets its assets too.
    built = build(specs)
    defs_list = [*built.assets, *built.checks]
    with dg.DagsterInstance.get() as instance:
        sync_evaluation_partitions(instance, specs)
        # Each selected pair's family: its dataset's snapshot and its instances (and their checks).
        families = [built.families[f] for f in dict.fromkeys(family_of(t) for t, _ in pairs)]
        selection = list(dict.fromkeys([*(f.snapshot for f in families), *(f.instances for f in families)]))
        print(f"materialising inputs: {', '.join(selection)} into {data.root}", flush=True)
        result = dg.materialize(defs_list, selection=selection, instance=instance, resources=resources,
                                raise_on_error=False, run_config=QUIET_LOGS, tags={"medbench/cli": "materialize"})
        if not result.success:
            report.errors.append(f"inputs failed: {_failure(result)}")
            return report
        for task, model in pairs:
            ev = plan(specs, data, task.ref, model.slug)
            reason = not_runnable_reason(model)
            done = existing_result(data, ev.run_id) is not None
            if reason and not (done and not force):
                report.outcomes.append(Outcome(ev.partition_key, "skipped", ev.run_id, reason))
                print(f"skipping {ev.partition_key}: {reason}", flush=True)
                continue
            print(f"evaluating {ev.partition_key} (run {ev.run_id}){' [reuse]' if done and not force else ''}",
                  flush=True)
            config = {"config": {"force": force}}
            fa = built.families[family_of(task)]
            result = dg.materialize(
                defs_list, selection=[fa.predictions, fa.metrics], partition_key=ev.partition_key,
                instance=instance, resources=resources, raise_on_error=False,
                run_config={**QUIET_LOGS, "ops": {fa.predictions: config, fa.metrics: config}},
                tags={"medbench/cli": "materialize"},
            )
            if not result.success:
                report.outcomes.append(Outcome(ev.partition_key, "failed", ev.run_id, _failure(result)))
                continue
            record = existing_result(data, ev.run_id)
            status = "reused" if done and not force else "ran"
            p = record.primary
            report.outcomes.append(Outcome(ev.partition_key, status, ev.run_id,
                                           f"{p.name} {p.value:.4f} [{p.ci_low:.4f}, {p.ci_high:.4f}]"))
        result = dg.materialize(defs_list, selection=["published_warehouse"], instance=instance, resources=resources,
                                raise_on_error=False, run_config=QUIET_LOGS, tags={"medbench/cli": "materialize"})
        if not result.success:
            report.errors.append(f"publish failed: {_failure(result)}")
            return report
        from warehouse.publish import current_version

        report.version = current_version(data) or ""
    return report


def _failure(result) -> str:
    """The first step failure's message, for the one-line report."""
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            err = event.step_failure_data.error
            return (err.message or "").strip().splitlines()[-1] if err.message else str(err)
    return "run failed (see the Dagster UI for the full log)"
