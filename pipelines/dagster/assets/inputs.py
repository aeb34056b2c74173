"""Assets holding the dataset snapshots and the task instances built from them.

Thin wrappers over ``pipelines.engine.inputs``; the checks here are the ones a maintainer would
otherwise do by eye: row counts as the spec says, no subject in two splits, a sane prevalence.
"""


import dagster as dg
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.engine import inputs
from pipelines.dagster.resources import MedbenchResource

PREVALENCE_RANGE = (0.005, 0.6)


@dg.asset(group_name="snapshots", kinds={"parquet"})
def clinicalqa_snapshot(context: dg.AssetExecutionContext, medbench: MedbenchResource) -> dg.MaterializeResult:
    """ClinicalQA rows (Hugging Face `snuh/ClinicalQA`, or the demo file) as a content-addressed Parquet."""
    m = inputs.materialise_clinicalqa_snapshot(medbench.specs(), medbench.data(), context.log.info)
    return dg.MaterializeResult(metadata={"snapshot_id": m.snapshot_id, "rows": m.rows, "path": str(m.path), **m.details})


@dg.asset(group_name="snapshots", kinds={"parquet"})
def vitaldb_snapshot(context: dg.AssetExecutionContext, medbench: MedbenchResource) -> dg.MaterializeResult:
    """VitalDB cases, track list and Solar8000/ART_MBP readings (long form) as content-addressed Parquet."""
    m = inputs.materialise_vitaldb_snapshot(medbench.specs(), medbench.data(), context.log.info)
    return dg.MaterializeResult(metadata={"snapshot_id": m.snapshot_id, "readings": m.rows, "path": str(m.path),
                                          **{k: str(v) for k, v in m.details.items()}})


@dg.asset(
    group_name="instances", kinds={"parquet"}, deps=[clinicalqa_snapshot],
    check_specs=[dg.AssetCheckSpec("row_count_matches_spec", asset="clinicalqa_items")],
)
def clinicalqa_items(context: dg.AssetExecutionContext, medbench: MedbenchResource) -> dg.MaterializeResult:
    """Prompted items of every clinicalqa task version (instance_id = question_id)."""
    specs, data = medbench.specs(), medbench.data()
    checks, meta = [], {}
    for task in sorted((t for t in specs.tasks.values() if t.dataset == "clinicalqa"), key=lambda t: t.ref):
        m = inputs.materialise_clinicalqa_items(specs, data, task.ref, context.log.info)
        meta[f"{task.ref} items"] = m.rows
        assert task.choice is not None
        checks.append(m.rows == task.choice.n_items)
        meta[f"{task.ref} expected"] = task.choice.n_items
    return dg.MaterializeResult(
        metadata=meta,
        check_results=[dg.AssetCheckResult(check_name="row_count_matches_spec", passed=all(checks), metadata=meta)],
    )


@dg.asset(
    group_name="instances", kinds={"parquet"}, deps=[vitaldb_snapshot],
    check_specs=[
        dg.AssetCheckSpec("subjects_in_one_split", asset="vitaldb_ioh_windows"),
        dg.AssetCheckSpec("label_prevalence_in_range", asset="vitaldb_ioh_windows"),
        dg.AssetCheckSpec("both_classes_in_test", asset="vitaldb_ioh_windows"),
    ],
)
def vitaldb_ioh_windows(context: dg.AssetExecutionContext, medbench: MedbenchResource) -> dg.MaterializeResult:
    """5-minute MAP windows with 5-minute-ahead hypotension labels and the subject-hash split."""
    specs, data = medbench.specs(), medbench.data()
    meta: dict = {}
    disjoint, prevalence_ok, both = [], [], []
    for task in sorted((t for t in specs.tasks.values() if t.dataset == "vitaldb"), key=lambda t: t.ref):
        m = inputs.materialise_ioh_windows(specs, data, task.ref, context.log.info)
        table = pq.read_table(m.path, columns=["subjectid", "split", "label"])
        pairs = table.group_by(["subjectid"]).aggregate([("split", "count_distinct")])
        disjoint.append(max(pairs.column("split_count_distinct").to_pylist(), default=1) == 1)
        labels = table.column("label").to_numpy()
        prevalence = float(labels.mean()) if len(labels) else 0.0
        prevalence_ok.append(PREVALENCE_RANGE[0] <= prevalence <= PREVALENCE_RANGE[1])
        test = table.filter(pc.equal(table.column("split"), "test")).column("label").to_numpy()
        both.append(bool(len(test)) and 0 < test.sum() < len(test))
        meta[f"{task.ref} windows"] = m.rows
        meta[f"{task.ref} prevalence"] = round(prevalence, 4)
        meta.update({f"{task.ref} {k}": str(v) for k, v in m.details.items()})
    return dg.MaterializeResult(
        metadata=meta,
        check_results=[
            dg.AssetCheckResult(check_name="subjects_in_one_split", passed=all(disjoint)),
            dg.AssetCheckResult(check_name="label_prevalence_in_range", passed=all(prevalence_ok),
                                metadata={"range": str(PREVALENCE_RANGE)}),
            dg.AssetCheckResult(check_name="both_classes_in_test", passed=all(both)),
        ],
    )
