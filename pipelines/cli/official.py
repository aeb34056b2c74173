"""``medbench official run``: the maintainers' path for an official package, without a submission;
``medbench official run-submission ID``: the same for an approved official submission.

Runs a package (a wheel with one ``medbench.official`` entry point) for one model and task in the
sandbox, scores its answers with the task's own scorer, and publishes the result like any other
(``tier: official`` when ``--submitted-by`` is the model's provider). The same steps run for an
approved submission once its package is uploaded. Exit 0 evaluated (or reused: rule one applies to
the exact package), 1 the package failed (the one-line reason is printed; nothing is published),
2 a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("official", help="run a submitted package in the sandbox and publish its official result",
                       description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    run_p = actions.add_parser("run", help="install and run a wheel in the sandbox, score it, publish")
    run_p.add_argument("--package", type=Path, required=True, metavar="WHEEL", help="the package's .whl file")
    run_p.add_argument("--model", required=True, help="model slug (its spec must list the task)")
    run_p.add_argument("--task", required=True, help="task, slug@version or slug")
    run_p.add_argument("--submitted-by", required=True, metavar="OWNER",
                       help="who stands behind the package (official only when it is the model's provider)")
    run_p.add_argument("--submission-id", default=None, help="the submission it came from, if any")
    run_p.add_argument("--sha256", default=None, help="the package sha256 that was submitted (checked)")
    run_p.add_argument("--pool", choices=("cpu", "gpu"), default="cpu",
                       help="gpu passes the NVIDIA devices into the sandbox (untested without a GPU)")
    run_p.add_argument("--memory-gib", type=float, default=None, help="run memory limit (default: the policy's)")
    run_p.add_argument("--wall-minutes", type=float, default=None, help="run wall-time limit (default: the policy's)")
    run_p.add_argument("--weights", type=Path, default=None, metavar="DIR",
                       help="a weight cache filled beforehand from the model's pinned revision, mounted read-only "
                            "at /weights")
    run_p.add_argument("--no-publish", action="store_true", help="write the result but do not publish")
    run_p.set_defaults(func=run)
    sub_p = actions.add_parser("run-submission", help="run an approved official submission's uploaded package")
    sub_p.add_argument("id", help="the submission (approved: queued)")
    sub_p.set_defaults(func=run_submission)


def run_submission(args: argparse.Namespace) -> int:
    """Exit 0 evaluated, 1 the package failed (the submission says why), 2 not runnable as asked."""
    from pipelines.orchestration.plugins import specs as load_specs
    from pipelines.official.submission import run_submission as run_it
    from medbench.layout import DataDir
    from medbench.submissions import StoreError, SubmissionStore

    data = DataDir()
    store = SubmissionStore.for_data(data)
    try:
        final = run_it(load_specs(), data, store, args.id, lambda line: print(line, file=sys.stderr))
    except (StoreError, ValueError, KeyError) as exc:
        print(f"medbench official: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    print(f"submission {final.id}: {final.state}" + (f" ({final.state_reason})" if final.state_reason else ""))
    return 0 if final.state == "evaluated" else 1


def run(args: argparse.Namespace) -> int:
    from pipelines.orchestration.plugins import specs as load_specs
    from pipelines.engine.release import publish_results
    from pipelines.official.evaluate import Submitter, evaluate_official
    from pipelines.official.package import PackageFailed
    from pipelines.official.policy import from_env
    from pipelines.official.sandbox import SandboxUnavailable
    from medbench.layout import DataDir

    if not args.package.is_file():
        print(f"medbench official: {args.package}: no such file; pass the wheel to run", file=sys.stderr)
        return 2
    specs = load_specs()
    data = DataDir()
    policy = from_env(args.pool, args.memory_gib, args.wall_minutes)
    log = lambda line: print(line, file=sys.stderr)  # noqa: E731
    try:
        record = evaluate_official(specs, data, args.task, args.model, args.package,
                                   Submitter(args.submitted_by, args.submission_id), policy, log, args.sha256,
                                   args.weights)
    except (PackageFailed, SandboxUnavailable) as exc:
        print(f"medbench official: failed: {exc}", file=sys.stderr)
        return 1
    except (KeyError, ValueError) as exc:
        print(f"medbench official: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    p = record.primary
    print(f"{record.tier} result {record.run_id}: {record.model.slug} on {record.task}, {p.name} {p.value:.4f} "
          f"[{p.ci_low:.4f}, {p.ci_high:.4f}], package {record.provenance.package_sha256}")
    if not args.no_publish:
        publish_results(specs, data, log)
    return 0
