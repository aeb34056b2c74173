"""``medbench submissions run``: evaluate the approved submissions now, in this process, when no
Dagster daemon runs the ``submissions`` sensor.

The same functions as the sensor (``pipelines.dagster.submission_flow``): the spec is written and
validated again, rule one first, then the runs: here through ``medbench materialize``'s path (one
Dagster run per partition, recorded in the data directory's instance, within the pools, then a
publish), and the submission moves to running, then evaluated with its run ids or failed with the
root cause ``medbench materialize`` prints. An approved official submission never takes that path:
its kept package runs in the sandbox (``submission_flow.run_official``, as the sensor's
``run_official_submission`` job does), and ends evaluated with its official run ids or failed with
the package's one-line reason. Exit 0 when every processed submission was evaluated
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
    from pipelines.dagster.plugins import specs as load_specs
    from pipelines.dagster.stale_runs import fail_dead_runs
    from pipelines.dagster.submission_flow import observe

    running = store.in_state("running")
    if not running:
        return
    with open_cli_instance(prepare_dagster_home(data)) as instance:
        fail_dead_runs(instance)
        for sub in running:
            observe(instance, store, sub, data, load_specs)


def run(args: argparse.Namespace) -> int:
    from pipelines.dagster.orchestrate import MaterializeError, materialize_selection
    from pipelines.dagster.plugins import specs as load_specs
    from pipelines.dagster.report import Outcome
    from pipelines.dagster.submission_flow import SUBMISSION_TAG, is_official, prepare, run_official, settle
    from warehouse.layout import DataDir
    from warehouse.submissions import SubmissionStore

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
                final = run_official(store, sub.id, data, load_specs)
                states += [final.state] if final is not None else []  # None: another run took it
                continue
            prepared = prepare(store, sub, data, load_specs)
            if prepared is not None:
                store.transition(sub.id, "running", "evaluating in-process (medbench submissions run)")
                try:
                    report = materialize_selection(demo=data.kind() == "demo", tasks=list(sub.tasks),
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
