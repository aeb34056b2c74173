"""``medbench submissions run``: evaluate the approved submissions now, in this process, when no
Dagster daemon runs the ``submissions`` sensor.

The same functions as the sensor (``pipelines.dagster.submission_flow``): the spec is written and
validated again, rule one first, then the runs: here through ``medbench materialize``'s path (one
Dagster run per partition, recorded in the data directory's instance, within the pools, then a
publish), and the submission moves to running, then evaluated with its run ids or failed with the
root cause ``medbench materialize`` prints. An approved official submission never takes that path:
its kept package runs in the sandbox through the sensor's ``run_official_submission`` job, executed
in this process on the data directory's instance (``run_official_here``), and ends evaluated with
its official run ids or failed with the package's one-line reason. Exit 0 when every processed submission was evaluated
(or none waited), 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys


def add_action(actions: argparse._SubParsersAction) -> None:
    p = actions.add_parser("run", help="evaluate approved submissions in-process (when no Dagster daemon runs)",
                           description="Process the approved submissions of this data directory now: write and "
                           "validate each spec, run its evaluations, publish, and move it to evaluated or failed.")
    p.add_argument("--limit", type=int, default=100, help="at most this many submissions (oldest approved first)")
    p.set_defaults(func=run)


def settle_dead(store, data) -> None:
    """Submissions left ``running`` by a run that died (a killed ``submissions run``): its Dagster run
    is reported failed (this host's dead runs, as ``medbench materialize`` does), then the submission
    fails with "run <id> died", as the sensors would with a daemon."""
    from pipelines.dagster.cli_instance import open_cli_instance
    from pipelines.dagster.orchestrate import prepare_dagster_home
    from pipelines.orchestration.plugins import specs as load_specs
    from pipelines.dagster.stale_runs import fail_dead_runs
    from pipelines.dagster.submission_flow import observe

    running = store.in_state("running")
    if not running:
        return
    with open_cli_instance(prepare_dagster_home(data)) as instance:
        fail_dead_runs(instance)
        for sub in running:
            observe(instance, store, sub, data, load_specs)


def run_official_here(data, sub) -> None:
    """An approved official submission through the job the sensor requests, executed in this process on
    the data directory's instance. Why a recorded run and not a bare call: the run carries this host
    and pid, so when this process is killed mid-package the next ``submissions run`` (``settle_dead``)
    reports the run dead and fails the submission with "run <id> died" instead of leaving it running.
    The job's op (``submission_flow.run_official``) moves the submission."""
    from pipelines.dagster.cli_instance import open_cli_instance
    from pipelines.dagster.orchestrate import QUIET_LOGS, prepare_dagster_home
    from pipelines.dagster.stale_runs import run_tags
    from pipelines.dagster.submission_jobs import official_run_request, run_official_submission

    request = official_run_request(sub)
    with open_cli_instance(prepare_dagster_home(data)) as instance:
        run_official_submission.execute_in_process(
            run_config={**request.run_config, **QUIET_LOGS}, instance=instance, raise_on_error=False,
            tags={"medbench/cli": "submissions-run", **run_tags(), **request.tags})


def run(args: argparse.Namespace) -> int:
    from pipelines.dagster.orchestrate import MaterializeError, materialize_selection
    from pipelines.orchestration.plugins import specs as load_specs
    from pipelines.orchestration.report import Outcome
    from pipelines.dagster.submission_flow import SUBMISSION_TAG, is_official, prepare, settle
    from medbench.layout import DataDir
    from medbench.submissions import SubmissionStore

    data = DataDir()
    store = SubmissionStore.for_data(data)
    try:
        settle_dead(store, data)
        waiting = store.approved(limit=args.limit)
        if not waiting:
            print("no approved submission is waiting")
            return 0
        states = []
        for sub in waiting:
            print(f"submission {sub.id}: {sub.model['slug']} on {', '.join(sub.tasks)} ({sub.tier})", flush=True)
            if is_official(sub):
                run_official_here(data, sub)
                final = store.get(sub.id)
                print(f"submission {final.id}: {final.state} ({final.state_reason})", flush=True)
                states += [final.state] if final.state != "running" else []  # running: another process took it
                continue
            prepared = prepare(store, sub, data, load_specs)
            if prepared is not None:
                store.transition(sub.id, "running", "evaluating in-process (medbench submissions run)")
                try:
                    report = materialize_selection(demo=data.demo_or_real() == "demo", tasks=list(sub.tasks),
                                                   models=[sub.model["slug"]], data=data,
                                                   extra_tags={SUBMISSION_TAG: sub.id})
                    outcomes = report.outcomes + [Outcome("publish", "failed", "", e) for e in report.errors]
                except MaterializeError as exc:
                    outcomes = [Outcome(sub.model["slug"], "failed", "", str(exc))]
                settle(store, store.get(sub.id), outcomes)
            states.append(store.get(sub.id).state)
        print(", ".join(f"{n} {s}" for s, n in {s: states.count(s) for s in states}.items()))
        return 0 if all(s == "evaluated" for s in states) else 1
    finally:
        store.close()
        sys.stdout.flush()
