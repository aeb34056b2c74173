"""``medbench reproduce RUN_ID``: re-materialize a published result from scratch and compare.

1. Fetch the result from the API (``--api-url``), or, when the API cannot be reached or does not
   have it, from the local published warehouse (``MEDBENCH_DATA``).
2. Check that this checkout can make the same experiment: the recorded task and model spec
   hashes must equal the local specs' (otherwise the differing spec is named and the command exits
   1 without running anything).
3. Re-materialize that one (task version, model) partition through Dagster in a scratch data
   directory of the same sort (demo results are reproduced on demo data; real ones read the
   sources again, honouring ``MEDBENCH_CLINICALQA_SOURCE`` / ``MEDBENCH_VITALDB_SOURCE`` mirrors),
   with its own Dagster home, so nothing is reused: the model really runs again.
4. Check the snapshot the scratch run made equals the recorded ``dataset_snapshot`` (and so the
   run id is the same), then compare the predictions (sha256, then row by row) and every metric
   with its interval, exactly.

Exit 0 identical; 1 different, or not reproducible here (the difference is explained); 2 usage
error (malformed run id); 3 the API is unreachable and the local warehouse does not have the run.
The scratch directory is deleted when everything is identical and kept (its path printed)
otherwise, or always with ``--keep``.

Its file name is shared on purpose: each ``medbench`` command's module is named after the command or
the noun it serves (docs/cli.md), whatever other package has a module of that name.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from pipelines.cli.client import common_options, say


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reproduce", parents=[common_options()],
        help="re-materialize a published result in a scratch data directory and check it is identical",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_id")
    p.add_argument("--scratch", type=Path, default=None, metavar="DIR",
                   help="scratch directory to use (must not exist or be empty; default: a new temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory even when identical")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from medbench.layout import RUN_ID_RE

    if not RUN_ID_RE.match(args.run_id):
        print(f"medbench reproduce: {args.run_id!r} is not a run id (12 lowercase hex digits)", file=sys.stderr)
        return 2
    scratch = _scratch_dir(args)
    if scratch is None:
        return 2
    fetched = _fetch(args, scratch / "published-predictions.parquet")
    if isinstance(fetched, int):
        shutil.rmtree(scratch, ignore_errors=True)
        return fetched
    result, original = fetched
    if (result.get("provenance") or {}).get("package_sha256"):
        shutil.rmtree(scratch, ignore_errors=True)
        return _reproduce_official(args, result)
    try:
        code, report = _reproduce(args, result, original, scratch)
    except BaseException:
        say(args, f"scratch directory kept for inspection: {scratch}")
        raise
    keep = args.keep or (code != 0 and (scratch / "data").exists())  # a run to inspect
    if keep:
        say(args, f"scratch directory kept: {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        print(json.dumps({**report, "scratch": str(scratch) if keep else None}, ensure_ascii=False, default=str))
    return code


def _reproduce_official(args: argparse.Namespace, result: dict[str, Any]) -> int:
    """An official result: its kept package rerun in the recorded sandbox on the local data directory."""
    from pipelines.orchestration.plugins import specs as load_specs
    from pipelines.official.package import PackageFailed
    from pipelines.official.policy import PolicyChanged
    from pipelines.official.reproduce import reproduce_official
    from medbench.layout import DataDir

    try:
        differences = reproduce_official(load_specs(), DataDir(), result, lambda line: say(args, line))
    except PolicyChanged as changed:  # never rerun under the new policy and called a reproduction
        print(f"medbench reproduce: run {args.run_id} not reproduced: {changed}", file=sys.stderr)
        if args.json:
            print(json.dumps({"run_id": args.run_id, "identical": False, "differences": [str(changed)]}))
        return 1
    except (PackageFailed, ValueError) as exc:
        differences = [f"the package did not rerun: {exc}"]
    out = sys.stderr if args.json else sys.stdout
    for line in differences:
        print(f"  {line}", file=out)
    print("IDENTICAL" if not differences else "DIFFERENT", file=out)
    if args.json:
        print(json.dumps({"run_id": args.run_id, "identical": not differences, "differences": differences}))
    return 0 if not differences else 1


def _scratch_dir(args: argparse.Namespace) -> Path | None:
    if args.scratch is None:
        return Path(tempfile.mkdtemp(prefix=f"medbench-reproduce-{args.run_id}-"))
    scratch = args.scratch.resolve()
    if scratch.exists() and any(scratch.iterdir()):
        print(f"medbench reproduce: --scratch {scratch} is not empty", file=sys.stderr)
        return None
    scratch.mkdir(parents=True, exist_ok=True)
    return scratch


def _fetch(args: argparse.Namespace, download_to: Path) -> tuple[dict[str, Any], Path] | int:
    """The published result (as the API shows it) and a local path to its predictions file."""
    from api.client import ApiClient, NotFound, Unreachable

    with ApiClient(args.api_url) as client:
        try:
            result = client.get(f"/v1/results/{args.run_id}")
        except (NotFound, Unreachable) as exc:
            say(args, f"{exc.message}; looking in the local published warehouse")
            local = _local(args.run_id)
            if local is None:
                print(f"medbench reproduce: run {args.run_id} is neither at {client.base_url} nor in the local warehouse",
                      file=sys.stderr)
                return exc.exit_code
            say(args, f"found {args.run_id} in the local warehouse")
            return local
        say(args, f"found {args.run_id} at {client.base_url}; downloading its predictions")
        try:
            client.download(f"/artifacts/{args.run_id}/predictions.parquet", download_to, result["predictions_sha256"])
        except (NotFound, Unreachable) as exc:
            print(f"medbench reproduce: {exc.message}", file=sys.stderr)
            return exc.exit_code
        return result, download_to


def _local(run_id: str) -> tuple[dict[str, Any], Path] | None:
    import msgspec

    from medbench.layout import DataDir
    from warehouse.read import NoWarehouse, result_by_id

    data = DataDir()
    try:
        found = result_by_id(data, run_id)
    except NoWarehouse:
        return None
    if found is None:
        return None
    path = data.predictions_path(run_id)
    record = msgspec.to_builtins(found.record)
    if not path.exists() or hashlib.sha256(path.read_bytes()).hexdigest() != record["predictions_sha256"]:
        return None
    return record, path


def _reproduce(args: argparse.Namespace, result: dict[str, Any], original: Path, scratch: Path) -> tuple[int, dict]:
    import pyarrow.parquet as pq

    from pipelines.engine import reproduction
    from pipelines.orchestration.plugins import specs as load_specs

    report: dict[str, Any] = {"run_id": args.run_id, "task": result["task"], "model": result["model"]["slug"],
                              "demo": result["demo"], "identical": False, "differences": []}
    specs = load_specs()
    mismatches = reproduction.version_mismatches(result, specs)
    if mismatches:
        report["differences"] = mismatches
        print("cannot reproduce here: this checkout's specs differ from the recorded versions", file=sys.stderr)
        for line in mismatches:
            print(f"  {line}", file=sys.stderr)
        return 1, report
    task, model = specs.task(result["task"]), specs.model(result["model"]["slug"])

    from pipelines.engine.snapshots import NotMaterialized, current_snapshot
    from pipelines.dagster.orchestrate import MaterializeError, materialize_selection
    from pipelines.engine.evaluate import existing_result
    from medbench.layout import DATA_ENV, DataDir

    data = DataDir(scratch / "data")
    os.environ[DATA_ENV] = str(data.root)
    os.environ["DAGSTER_HOME"] = str(data.root / "dagster")  # a fresh instance: no run history to reuse
    say(args, f"re-materializing {model.slug} on {task.ref} in {data.root}{' on demo data' if result['demo'] else ''}")
    try:
        with contextlib.redirect_stdout(sys.stderr):
            outcome_report = materialize_selection(demo=bool(result["demo"]), tasks=[task.ref], models=[model.slug],
                                                   data=data)
    except MaterializeError as exc:
        report["differences"] = [str(exc)]
        print(f"medbench reproduce: {exc}", file=sys.stderr)
        return 1, report
    outcome = outcome_report.outcome(task.ref, model.slug)
    try:
        snapshot: str | None = current_snapshot(data, task.dataset).snapshot_id
    except NotMaterialized:
        snapshot = None
    recorded_snapshot = result["versions"]["dataset_snapshot"]
    if snapshot != recorded_snapshot:
        report["differences"] = [f"dataset snapshot: the result records {recorded_snapshot}, this machine made {snapshot}"]
        print(f"not reproducible here: {report['differences'][0]}", file=sys.stderr)
        return 1, report
    if outcome is None or outcome.status != "ran":
        why = outcome.detail if outcome else "; ".join(outcome_report.errors) or "nothing ran"
        report["differences"] = [f"the evaluation did not run here: {why}"]
        print(f"not reproducible here: {why}", file=sys.stderr)
        return 1, report
    if outcome.run_id != args.run_id:
        report["differences"] = [f"run id: this checkout makes {outcome.run_id} from the same specs and snapshot"]
        print(f"different: {report['differences'][0]}", file=sys.stderr)
        return 1, report

    import msgspec

    again = msgspec.to_builtins(existing_result(data, outcome.run_id))
    sha_again = again["predictions_sha256"]
    preds = reproduction.compare_predictions(pq.read_table(original), pq.read_table(data.predictions_path(outcome.run_id)))
    metrics = reproduction.metric_differences(result, again)
    differences = []
    if sha_again != result["predictions_sha256"]:
        differences.append(f"predictions sha256: published {result['predictions_sha256']}, reproduced {sha_again}")
    if not preds.identical:
        differences.append(f"predictions: {preds.differing_rows} of {preds.rows_original} rows differ, "
                           f"{len(preds.missing)} missing, {len(preds.extra)} extra"
                           + (f"; columns only published {preds.columns_original_only}" if preds.columns_original_only else "")
                           + (f"; columns only reproduced {preds.columns_reproduced_only}" if preds.columns_reproduced_only else ""))
        differences += [f"  {e}" for e in preds.examples]
    differences += metrics
    report.update(identical=not differences, differences=differences, predictions_sha256=sha_again,
                  rows=preds.rows_reproduced, code_revision_published=result["versions"]["code_revision"],
                  code_revision_now=again["versions"]["code_revision"])
    out = sys.stderr if args.json else sys.stdout
    print(f"\nreproduced {model.slug} on {task.ref} (run {args.run_id}) from scratch", file=out)
    print(f"  predictions sha256  {'identical' if sha_again == result['predictions_sha256'] else 'DIFFERENT'}", file=out)
    print(f"  predictions rows    {'identical' if preds.identical else 'DIFFERENT'} ({preds.rows_reproduced} rows)", file=out)
    print(f"  metrics             {'identical' if not metrics else 'DIFFERENT'} ({len(again['metrics'])} metrics with CIs)",
          file=out)
    print(f"  code revision       published {result['versions']['code_revision']}, now {again['versions']['code_revision']}",
          file=out)
    for line in differences:
        print(f"  {line}", file=out)
    print("IDENTICAL" if not differences else "DIFFERENT", file=out)
    return (0 if not differences else 1), report
