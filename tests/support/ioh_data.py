"""A warehouse whose vitaldb-ioh@0 results are scored by the real pipeline code, for the statistics tests.

Built on ``api_data``'s catalog, with what those tests need that it lacks: the two vitaldb-ioh@0
results (MAP alone, the task's baseline, and a better scorer) get their own predictions on the same
windows, scored by ``score_metrics`` with the task's bootstrap and interval settings (so the extras
carry the real count of one-class replicates), the ``baseline_comparisons`` rows are computed as a
release computes them, and the clinicalqa results' contamination flag and its basis come from the
pipeline's own functions on model dates chosen to cover both bases (knowledge cutoff, release date).
Also: ``another_scorer`` (one more result on the same windows), ``demo_windows`` (the demo VitalDB's
windows, for fitting), ``check_versus_baseline`` (a result's ``versus_baseline`` against an
independent computation from the stored predictions, on any warehouse, the demo's included).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import types
from pathlib import Path

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.engine.reference_model import reference_comparison_rows
from pipelines.engine.evaluate import contamination, contamination_verdict
from pipelines.engine.specs import spec_builtins, spec_hash
from medbench.stats.calibration import Recalibration
from pipelines.tasks.vitaldb_ioh.reporting import probability_metadata
from pipelines.tasks.vitaldb_ioh.score import score_metrics
from support.api_data import RUN_IDS, catalog, run_id
from support.plugins import specs as load_specs
from medbench.layout import DataDir
from warehouse.publish import publish
from medbench.records import MetricValue, ModelRef, ResultRecord, Withheld

BASELINE = "neglastmap-ioh0"  # medbench/neg-last-map: the task spec's baseline_model
OTHER = "logreg-ioh0"
SUBJECTS, PER_SUBJECT = 12, 8
NOW = dt.datetime(2026, 10, 29, 12, tzinfo=dt.UTC)
# clinicalqa (public 2025-04-04): possible by the cutoff, possible by the release date alone, no, unknown
MODEL_DATES = {
    "kgpu/medgemma-27b": (dt.date(2025, 5, 20), dt.date(2025, 6, 1)),
    "openai/gpt-oss-20b": (dt.date(2025, 8, 5), None),
    "hf/gpt-oss-20b": (dt.date(2025, 8, 5), dt.date(2024, 1, 1)),
    "medbench/random": (None, None),
}


# a participant flow as a build writes it (``WindowsSummary.participant_flow``), for the task's page
FLOW = [{"label": "cases in the snapshot", "count": 80, "unit": "cases", "level": 0, "note": ""},
        {"label": "excluded: no Solar8000/ART_MBP track", "count": 6, "unit": "cases", "level": 1, "note": ""},
        {"label": "excluded: age below 18 or missing", "count": 3, "unit": "cases", "level": 1, "note": ""},
        {"label": "cohort", "count": 71, "unit": "cases", "level": 0, "note": "60 subjects"},
        {"label": "windows", "count": 8900, "unit": "windows", "level": 0, "note": "from 70 cases of 59 subjects"},
        {"label": "test", "count": 96, "unit": "windows", "level": 1, "note": "12 subjects, prevalence 0.333"}]


def windows(positive_subjects: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels, subjects, caseids) of the shared test windows; only the first ``positive_subjects``
    subjects hold positives (fewer: more one-class bootstrap replicates)."""
    subjects = np.repeat(np.arange(500, 500 + SUBJECTS), PER_SUBJECT).astype(np.int32)
    k = np.tile(np.arange(PER_SUBJECT), SUBJECTS)
    labels = ((k % 3 == 0) & (subjects < 500 + positive_subjects)).astype(np.int8)
    return labels, subjects, subjects + 1000


def write_ioh_predictions(path: Path, separation: float, noise_seed: int, positive_subjects: int) -> pa.Table:
    labels, subjects, cases = windows(positive_subjects)
    rng = np.random.default_rng(noise_seed)
    t = np.tile(np.arange(PER_SUBJECT) * 30 + 600, SUBJECTS).astype(np.int32)
    table = pa.table({
        "instance_id": pa.array([f"{c}:{x}" for c, x in zip(cases, t)], pa.string()),
        "score": pa.array(rng.normal(size=len(labels)) + separation * labels, pa.float64()),
        "label": pa.array(labels, pa.int8()), "caseid": pa.array(cases, pa.int32()),
        "subjectid": pa.array(subjects, pa.int32()), "t": pa.array(t, pa.int32()),
    })
    # the scores are not probabilities (like a rule's): map them by a logistic recalibration fitted
    # on a validation draw of the same kind, as the family does on the validation split (``probabilities``)
    val = rng.normal(size=4 * len(labels))
    val_labels = (np.arange(len(val)) % 3 == 0).astype(np.int8)
    val = val + separation * val_labels
    if val[val_labels == 0].max() < val[val_labels == 1].min():
        # classes this far apart are separable, where a logistic fit has no finite maximum: a few
        # flipped validation labels (as real validation windows have) keep the map finite
        val_labels[::7] ^= 1
    recal = Recalibration.fit(val, val_labels)
    table = table.replace_schema_metadata(probability_metadata(False, recal))
    pq.write_table(table, path)
    return table


def attributes(subjects: np.ndarray) -> dict[str, list]:
    """Sex and age of each window's subject: F for even subject ids; ages 30, 50, 70 in turn."""
    return {"sex": ["F" if s % 2 == 0 else "M" for s in subjects],
            "age": [float(30 + 20 * (s % 3)) for s in subjects]}


def scored(data: DataDir, r: ResultRecord, separation: float, noise: int,
           positive_subjects: int = SUBJECTS) -> ResultRecord:
    """``r`` with its own predictions on the shared windows and the metrics the task computes from them."""
    task = load_specs().task("vitaldb-ioh@0")
    path = data.predictions_path(r.run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = write_ioh_predictions(path, separation, noise, positive_subjects)
    summary = score_metrics(table, task.bootstrap, task.intervals, task.ioh.reporting,
                            attributes(table.column("subjectid").to_numpy()))
    return msgspec.structs.replace(
        r, metrics=[MetricValue(*m) for m in summary.metrics], n=summary.n, extras=summary.extras_json(),
        subgroups=summary.subgroups, withheld=[Withheld(n, why) for n, why in summary.withheld],
        predictions_sha256=hashlib.sha256(path.read_bytes()).hexdigest())


def another_scorer(data: DataDir, like: ResultRecord, name: str, separation: float, noise: int) -> ResultRecord:
    """One more vitaldb-ioh@0 result (model ``ml/<name>``) on the same windows."""
    model = ModelRef(f"ml/{name}", f"Scorer {name}", "ml", "ml", name, "1")
    return scored(data, msgspec.structs.replace(like, run_id=run_id(f"ioh:{name}"), model=model), separation, noise)


def ioh_catalog(data: DataDir, positive_subjects: int = SUBJECTS):
    specs = load_specs()
    task, cqa = specs.task("vitaldb-ioh@0"), specs.datasets["clinicalqa"]
    cat = catalog(data, with_late_run=True)
    records = []
    for r in cat.results:
        if r.run_id in (RUN_IDS[BASELINE], RUN_IDS[OTHER]):
            separation, noise = (1.0, 1) if r.run_id == RUN_IDS[BASELINE] else (2.5, 2)
            r = scored(data, r, separation, noise, positive_subjects)
        elif r.model.slug in MODEL_DATES:
            released, cutoff = MODEL_DATES[r.model.slug]
            model = msgspec.structs.replace(r.model, release_date=released, knowledge_cutoff=cutoff)
            dates = types.SimpleNamespace(release_date=released, knowledge_cutoff=cutoff, training_data=[])
            status, basis = contamination_verdict(dates, cqa)  # type: ignore[arg-type]
            r = msgspec.structs.replace(r, model=model, contamination=contamination(dates, cqa),  # type: ignore[arg-type]
                                        contamination_basis=basis, contamination_status=status)
        records.append(r)
    # the task row as a release publishes it, so /v1/compare uses the spec's own bootstrap settings
    tasks = [t if (t["slug"], t["version"]) != (task.slug, task.version) else
             {**t, "spec": spec_builtins(task), "spec_hash": spec_hash(task), "participant_flow": FLOW}
             for t in cat.tasks]
    return dataclasses.replace(cat, results=records, tasks=tasks,
                               baseline_comparisons=reference_comparison_rows(specs, data, records))


def publish_ioh(root: Path, positive_subjects: int = SUBJECTS) -> DataDir:
    data = DataDir(root)
    publish(data, ioh_catalog(data, positive_subjects), now=NOW)
    return data


def demo_windows(root: Path) -> Path:
    """The vitaldb-ioh@0 windows of the demo VitalDB (generated, loaded and windowed under ``root``)."""
    from pipelines.datasets.vitaldb.demo import write_demo_vitaldb
    from pipelines.datasets.vitaldb.source import load_vitaldb_snapshot
    from pipelines.tasks.vitaldb_ioh.instances import build_windows

    write_demo_vitaldb(root / "api")
    snap = load_vitaldb_snapshot(str(root / "api"), root / "snap", root / "cache", log=lambda _: None)
    path = root / "windows.parquet"
    build_windows(snap.dir, load_specs().task("vitaldb-ioh@0").ioh, path, log=lambda _: None)
    return path


def _columns(root: Path, run: str) -> dict[str, np.ndarray]:
    t = pq.read_table(DataDir(root).predictions_path(run)).sort_by("instance_id")
    return {k: t.column(k).to_numpy() for k in ("instance_id", "score", "label", "subjectid")}


def check_versus_baseline(client, root: Path, run: str, base: str) -> dict:
    """Assert that ``run``'s ``versus_baseline`` (JSON and page) is the paired cluster-bootstrap AUROC
    difference to ``base`` computed here from the two stored predictions files, and the same numbers
    as /v1/compare of the two; returns the JSON object."""
    import html
    import re

    from medbench.stats.paired_auroc import METHOD, paired_auroc_difference

    task = load_specs().task("vitaldb-ioh@0")
    body = client.get(f"/v1/results/{run}").json()
    v = body["versus_baseline"]
    assert v["baseline_run_id"] == base and v["baseline_model"] == task.ioh.baseline_model == "medbench/neg-last-map"
    a, b = _columns(root, run), _columns(root, base)
    assert (a["instance_id"] == b["instance_id"]).all() and (a["label"] == b["label"]).all()
    want = paired_auroc_difference(a["score"], b["score"], a["label"], a["subjectid"],
                                   task.bootstrap.replicates, task.bootstrap.seed)
    assert want is not None and v["metric"] == "auroc" and v["method"] == METHOD
    got = (v["difference"], v["ci_low"], v["ci_high"], v["p_value"])
    assert np.allclose(got, (want.difference, want.ci_low, want.ci_high, want.p_value), rtol=0, atol=1e-12)
    base_value = client.get(f"/v1/results/{base}").json()["metric"]["value"]
    assert abs(v["difference"] - (body["metric"]["value"] - base_value)) < 1e-12
    c = client.get(f"/v1/compare?a={run}&b={base}").json()  # the same numbers as a comparison
    assert np.allclose((c["difference"], c["ci_low"], c["ci_high"], c["p_value"]), got, rtol=0, atol=1e-12)
    m = re.search(r'<p id="versus-baseline">(.*?)</p>', html.unescape(client.get(f"/r/{run}").text), re.S)
    assert m is not None, f"the page of {run} does not show its difference to the baseline"
    assert f'href="/r/{base}"' in m.group(1) and "medbench/neg-last-map" in m.group(1) and METHOD in m.group(1)
    assert all(f"{x:.4f}" in m.group(1) for x in got[:3]) and "p " in m.group(1)
    return v
