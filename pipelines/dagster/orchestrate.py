"""Driving Dagster from the command line: decide, then launch only what needs work, then publish.

Used by ``medbench materialize``, ``medbench demo`` and ``medbench eval``. Order, and why:
inputs (skipped when Dagster's last materializations of the snapshots and instances match the
current specs and files: run ids need current snapshots, rebuilding them costs a run), then rule one
for every selected partition without a run (``plan.py``; a reuse Dagster does not already show
with its run id is recorded at once as an AssetObservation on the metrics asset, a pair that
cannot run here as a materialization marked skipped, ``skip_records.py``), then the partitions that need
work as concurrent, bounded Dagster runs (``launch.py``), then the publish, only when something
ran or the version readers would serve lacks a finished result or holds an older record of one
(a ``--force`` rerun whose publish failed); otherwise a damaged ``CURRENT`` or analysts' link is
only repaired, no new version built (``warehouse.repair.repair_current``). Every run carries the
tags in ``base_tags`` and belongs to one of the code location's named jobs (``materialize_inputs``, ``evaluate_<family>``,
``publish``, from ``building.named_jobs``), resolved once per invocation: in the UI the CLI's
runs sit under the same job names and descriptions as a maintainer's, and no run pays for
resolving an ad-hoc job over the whole asset graph.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pipelines.orchestration.plan import MaterializeError, Planned, plan_selection, render_plan, select, total_cost
from pipelines.orchestration.report import Outcome, Report, failure
from pipelines.dagster.rule_one import detail, publish_needed, record_reuses
from pipelines.orchestration.plugins import specs as load_specs
from medbench.layout import DataDir, DemoOrRealError

__all__ = ["MaterializeError", "Outcome", "Report", "materialize_selection", "dry_run_selection"]

REPO_ROOT = Path(__file__).resolve().parents[2]
# The CLI shows Dagster's INFO lines (our progress and results), not its DEBUG event stream.
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


def prepare_dagster_home(data: DataDir, home: Path | str | None = None) -> Path:
    """DAGSTER_HOME (``home`` when given) defaults to <data>/dagster, seeded with the checkout's dagster.yaml."""
    home = Path(home or os.environ.get("DAGSTER_HOME") or data.root / "dagster")
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    if not target.exists():  # copied whole, then renamed: a run started alongside never reads half of it
        partial = home / f".dagster.yaml.{os.getpid()}.tmp"
        shutil.copyfile(REPO_ROOT / "dagster.yaml", partial)
        os.replace(partial, target)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def base_tags() -> dict[str, str]:
    """Tags of every run the CLI launches: who launched it (host, pid) for stale-run recovery."""
    from pipelines.dagster.stale_runs import run_tags

    return {"medbench/cli": "materialize", **run_tags()}


def recover_dead_runs(instance, data: DataDir) -> None:
    """Runs of local processes that died are marked failed, and their stale temp files removed,
    before anything new starts (a killed materialization never leaves a run STARTED)."""
    from pipelines.dagster.stale_runs import recover

    summary = recover(instance, data)
    if summary and "nothing to do" not in summary:
        print(summary, flush=True)


def _kind(data: DataDir, demo: bool, claim: bool) -> None:
    want = "demo" if demo else "real"
    try:
        if claim:
            data.claim(want)
        elif data.demo_or_real() not in (None, want):
            data.claim(want)  # raises with the standard message
    except DemoOrRealError as exc:
        raise MaterializeError(str(exc)) from None


def dry_run_selection(demo: bool, tasks=(), models=(), force: bool = False, data: DataDir | None = None) -> str:
    """What ``materialize_selection`` would do, with estimated costs; starts no run, writes nothing."""
    data = data or DataDir()
    _kind(data, demo, claim=False)
    specs = load_specs()
    return render_plan(plan_selection(specs, data, select(specs, list(tasks), list(models)), force, demo=demo))


def materialize_selection(demo: bool, tasks: list[str] = (), models: list[str] = (), force: bool = False,
                          data: DataDir | None = None, jobs: int | None = None, max_cost: float | None = None,
                          pools: list[str] = (), refresh_inputs: bool = False,
                          dagster_home: Path | str | None = None, lock_wait_s: float | None = None,
                          interrupts: tuple[type[BaseException], ...] = (KeyboardInterrupt,),
                          extra_tags: dict[str, str] | None = None) -> Report:
    """``dagster_home``: the instance to record in (default DAGSTER_HOME, else <data>/dagster);
    ``extra_tags``: added to every run (``medbench submissions run`` tags its runs with the submission);
    ``interrupts``: the exceptions that mean "stop" (Ctrl-C; inside a run also Dagster's own);
    ``lock_wait_s``: how long to wait for another process's run of a partition (``launch.partition_wait_s``)."""
    from dagster import AssetKey

    from pipelines.dagster import inputs_state
    from pipelines.dagster.building import build, resolved_jobs
    from pipelines.dagster.limits import Limits, limits_of, with_overrides
    from pipelines.dagster.partitions import sync_evaluation_partitions
    from pipelines.dagster.resources import MedbenchResource

    data = data or DataDir()
    _kind(data, demo, claim=True)
    specs = load_specs()
    pairs = select(specs, list(tasks), list(models))
    home = prepare_dagster_home(data, dagster_home)
    try:
        with_overrides(Limits(), list(pools))  # a bad --pool fails before the instance is touched
    except ValueError as exc:
        raise MaterializeError(str(exc)) from None
    resources = {"medbench": MedbenchResource(data_dir=str(data.root))}
    report = Report(data=data)
    tags = {**base_tags(), **(extra_tags or {})}
    # Built now, not at import: a family registered at runtime (a plug-in, a test) gets its assets too.
    built = build(specs)
    jobs_by_name = resolved_jobs(built, resources)
    from pipelines.dagster.cli_instance import open_cli_instance

    with open_cli_instance(home) as instance:
        limits = with_overrides(limits_of(instance), list(pools))
        jobs = jobs or limits.max_runs
        recover_dead_runs(instance, data)
        sync_evaluation_partitions(instance, specs)
        families = [built.families[f] for f in dict.fromkeys(t.family for t, _ in pairs)]
        if refresh_inputs or not inputs_state.current(instance, specs, data, families):
            selection = list(dict.fromkeys([*(f.snapshot for f in families), *(f.instances for f in families)]))
            print(f"materializing inputs: {', '.join(selection)} into {data.root}", flush=True)
            result = jobs_by_name["materialize_inputs"].execute_in_process(
                run_config=QUIET_LOGS, instance=instance, raise_on_error=False, tags=tags,
                asset_selection=[AssetKey.from_user_string(a) for a in selection])
            if not result.success:
                report.errors.append(f"inputs failed: {failure(result)}")
                return report
        else:
            print("inputs current (snapshots and instances match the specs): not rematerialized", flush=True)
        planned = plan_selection(specs, data, pairs, force)
        to_run = [p for p in planned if p.status == "run"]
        cost = total_cost(to_run)
        if max_cost is not None and cost > max_cost:
            raise MaterializeError(f"estimated cost {cost:.4f} USD of {len(to_run)} evaluation(s) is above "
                                   f"--max-cost {max_cost:g}; nothing was started (see --dry-run)")
        reused = [p for p in planned if p.status == "reuse"]
        report.outcomes += record_reuses(instance, built, data, reused)
        skipped = [p for p in planned if p.status == "skip"]
        report.outcomes += [Outcome(p.partition, "skipped", p.run_id, p.reason) for p in skipped]
        for p in skipped:
            print(f"skipping {p.partition}: {p.reason}", flush=True)
        withdrawn = [p for p in planned if p.status == "withdrawn"]
        report.outcomes += [Outcome(p.partition, "withdrawn", p.run_id, p.reason) for p in withdrawn]
        for p in withdrawn:
            print(f"not recomputing {p.partition} ({p.run_id}): {p.reason}", flush=True)
        from pipelines.dagster.skip_records import record_skips

        record_skips(instance, built, specs, skipped)  # materialized as skipped, as a backfill records them
        print(f"{len(reused)} reused, {len(to_run)} to run ({jobs} at once at most)", flush=True)
        if to_run:
            from pipelines.dagster.launch import fail_in_flight, run_bounded

            def log(message: str) -> None:
                print(message, flush=True)

            launch = _launcher(instance, built, jobs_by_name, tags, data, force, lock_wait_s)
            outcomes, report.interrupted = run_bounded(
                to_run, jobs, limits, launch, on_interrupt=lambda tokens: fail_in_flight(instance, tokens, log),
                log=log, interrupts=interrupts)
            report.outcomes += outcomes
            if report.interrupted:
                return report
        from warehouse.repair import pointer_problem, repair_current, servable_current

        problem = pointer_problem(data)
        if any(o.status == "ran" for o in report.outcomes) or publish_needed(data):
            from warehouse.keys import SigningKeyError, signing_key

            # before the publish job: a demo key's path is printed (made on first use); a missing key on
            # real data is one clear error line (the results stay, the next materialize publishes them)
            try:
                signing_key(data, lambda line: print(line, flush=True))
            except SigningKeyError as exc:
                report.errors.append(str(exc))
                return report
            result = jobs_by_name["publish"].execute_in_process(
                run_config=QUIET_LOGS, instance=instance, raise_on_error=False, tags=tags)
            if not result.success:
                report.errors.append(f"publish failed: {failure(result)}")
                return report
            now = servable_current(data)[0]
            repairs = [f"repaired warehouse/CURRENT: {problem}; now {now}"] if problem and now else []
        else:
            try:
                repairs = repair_current(data)
            except OSError as exc:
                repairs = []
                report.errors.append(f"could not repair the warehouse pointer or the medbench.duckdb link: {exc}")
        for line in repairs:
            print(line, flush=True)
        version, cause = servable_current(data)  # "published" is said only of a version that opens
        if cause and not report.errors:
            report.errors.append(f"the published warehouse is unusable: {cause}; run `medbench materialize` again")
        report.version = version or ""
    return report


def _launcher(instance, built, jobs_by_name: dict, tags, data: DataDir, force: bool, wait_s: float | None):
    from pipelines.dagster.launch import execute_partition
    from pipelines.dagster.partitions import evaluation_job_name
    from pipelines.dagster.engine_calls import existing_result, written_since

    def reuse(p: Planned, held) -> Outcome | None:
        """Rule one again, under the partition's lock: a result another process stored meanwhile
        (with ``--force``: one it stored while this one waited) is reused, not paid for twice."""
        path = data.result_path(p.run_id)
        if not path.exists() or (force and not (held.waited and written_since(path, held.asked_at))):
            return None
        print(f"{p.partition}: the other process evaluated it (run {p.run_id}); reusing its result", flush=True)
        return record_reuses(instance, built, data, [p])[0]

    def launch(p: Planned, token: str) -> Outcome:
        fa = built.families[p.task.family]
        config = {"config": {"force": force}}
        job = jobs_by_name[evaluation_job_name(p.task.family)]
        result = execute_partition(job, p, token, instance, data.root, tags=tags, reuse=reuse, wait_s=wait_s,
                                   run_config={**QUIET_LOGS, "ops": {fa.predictions: config, fa.metrics: config}})
        if isinstance(result, Outcome):
            return result
        if not result.success:
            return Outcome(p.partition, "failed", p.run_id, failure(result))
        record = existing_result(data, p.run_id)  # planned after the inputs, so the run id is known
        return Outcome(p.partition, "ran", p.run_id, detail(record) if record else "")

    return launch
