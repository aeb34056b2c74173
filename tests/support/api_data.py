"""A small synthetic warehouse for the API tests, published with the real ``warehouse.publish``.

It covers every case the contract distinguishes: a choice task with two versions and several
models (a tie on the metric, broken by eval_date), a score task (parse_rate null, n = windows), two
runs of one model and task where the newer supersedes the older, a provider model id shared by two
providers, contamination true/false/null, and predictions Parquet files in the columns of docs/duckdb.md.
Nothing here depends on the pipeline. Shapes are transcribed from docs/api.md by hand (not derived
from ``api.schemas``) so that a drift between the two is caught.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from warehouse.keys import KEY_ENV, load_key, sign_catalog
from medbench.layout import DataDir
from warehouse.publish import Catalog, publish
from warehouse.releases import Signer
from medbench.records import MetricValue, ModelRef, ResultRecord, UsageRecord, Versions

UTC = dt.timezone.utc


def run_id(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()[:12]


DATASETS = [
    {
        "slug": "clinicalqa", "name": "ClinicalQA", "license": "CC BY 4.0", "license_url": "https://creativecommons.org/licenses/by/4.0/",
        "citation": "SNUH-HARI. ClinicalQA: Korean Medical Knowledge QA Benchmark. 2025.", "doi": "10.23421/2026.0800",
        "public_since": dt.date(2025, 4, 4), "description": "Korean five-option questions.",
        "source": {"kind": "huggingface", "location": "snuh/ClinicalQA", "split": "train", "revision": "29bdc90"},
        "snapshot_id": "snap-cqa",
    },
    {
        "slug": "vitaldb", "name": "VitalDB", "license": "CC BY 4.0", "license_url": "https://creativecommons.org/licenses/by/4.0/",
        "citation": "Lee HC et al. VitalDB. Sci Data. 2022;9:279.", "doi": "10.1038/s41597-022-01411-5",
        "public_since": dt.date(2022, 6, 8), "description": "Intraoperative vital signs.",
        "source": {"kind": "vitaldb-api", "location": "https://api.vitaldb.net", "split": "", "revision": "content-hash"},
        "snapshot_id": "snap-vdb",
    },
]


def _task(slug: str, version: int, dataset: str, kind: str, metric: str) -> dict[str, Any]:
    spec = {"slug": slug, "version": version, "dataset": dataset, "kind": kind, "primary_metric": metric,
            "preview": True, "bootstrap": {"replicates": 100, "seed": 1}}
    return {"slug": slug, "version": version, "dataset": dataset, "kind": kind, "title": f"{slug} v{version}",
            "primary_metric": metric, "preview": True, "spec_hash": hashlib.sha256(repr(spec).encode()).hexdigest(),
            "spec": spec, "description": f"Task {slug}@{version}.",
            "cluster_column": "subjectid" if kind == "score" else None}  # as the families declare it


TASKS = [
    _task("clinicalqa", 0, "clinicalqa", "choice", "accuracy"),
    _task("clinicalqa", 1, "clinicalqa", "choice", "accuracy"),
    _task("vitaldb-ioh", 0, "vitaldb", "score", "auroc"),
]

MODEL_REFS = {
    "kgpu/medgemma-27b": ModelRef("kgpu/medgemma-27b", "MedGemma 27B", "llm", "kgpu", "medgemma-27b", "rev-a",
                                  dt.date(2025, 5, 20), dt.date(2025, 1, 1)),
    "medbench/random": ModelRef("medbench/random", "Uniform random choice", "rule", "medbench", "random", "1"),
    "openai/gpt-oss-20b": ModelRef("openai/gpt-oss-20b", "gpt-oss 20B (OpenAI)", "llm", "openai", "gpt-oss-20b", "2025-08",
                                   dt.date(2025, 8, 5), dt.date(2024, 6, 1)),
    "hf/gpt-oss-20b": ModelRef("hf/gpt-oss-20b", "gpt-oss 20B (HF)", "llm", "hf", "gpt-oss-20b", "main", dt.date(2025, 8, 5)),
    "medbench/neg-last-map": ModelRef("medbench/neg-last-map", "MAP alone", "rule", "medbench", "neg-last-map", "1"),
    "medbench/logreg": ModelRef("medbench/logreg", "Logistic regression on MAP", "ml", "medbench", "logreg", "1"),
}

MODELS = [
    {"slug": m.slug, "name": m.name, "type": m.type, "provider": m.provider, "provider_model_id": m.provider_model_id,
     "revision": m.revision, "release_date": m.release_date, "knowledge_cutoff": m.knowledge_cutoff, "backend": "rule",
     "description": m.name, "spec_hash": run_id("spec:" + m.slug) * 5, "spec": {"slug": m.slug}}
    for m in MODEL_REFS.values()
]

# label -> (model slug, task, metric value, eval date, created_at, parser, contamination)
CHOICE = "choice"
SCORE = "score"
RUNS: dict[str, tuple[str, str, float, dt.date, dt.datetime, str | None, bool | None]] = {
    "medgemma-cqa0-old": ("kgpu/medgemma-27b", "clinicalqa@0", 0.69, dt.date(2026, 10, 1), dt.datetime(2026, 10, 1, 9, tzinfo=UTC), "v1", True),
    "medgemma-cqa0": ("kgpu/medgemma-27b", "clinicalqa@0", 0.71, dt.date(2026, 10, 20), dt.datetime(2026, 10, 20, 9, tzinfo=UTC), "v2", True),
    "gptoss-cqa0": ("openai/gpt-oss-20b", "clinicalqa@0", 0.71, dt.date(2026, 10, 15), dt.datetime(2026, 10, 15, 9, tzinfo=UTC), "v2", False),
    "random-cqa0": ("medbench/random", "clinicalqa@0", 0.2, dt.date(2026, 10, 2), dt.datetime(2026, 10, 2, 9, tzinfo=UTC), "v2", None),
    "medgemma-cqa1": ("kgpu/medgemma-27b", "clinicalqa@1", 0.73, dt.date(2026, 10, 21), dt.datetime(2026, 10, 21, 9, tzinfo=UTC), "v2", True),
    "neglastmap-ioh0": ("medbench/neg-last-map", "vitaldb-ioh@0", 0.93, dt.date(2026, 10, 3), dt.datetime(2026, 10, 3, 9, tzinfo=UTC), None, None),
    "logreg-ioh0": ("medbench/logreg", "vitaldb-ioh@0", 0.88, dt.date(2026, 10, 4), dt.datetime(2026, 10, 4, 9, tzinfo=UTC), None, None),
}
RUN_IDS = {label: run_id(label) for label in RUNS}
# published later, by the republish test
LATE_RUN = ("hf-gptoss-cqa0", ("hf/gpt-oss-20b", "clinicalqa@0", 0.5, dt.date(2026, 10, 25), dt.datetime(2026, 10, 25, 9, tzinfo=UTC), "v2", False))


def write_choice_predictions(path: Path, n: int) -> None:
    options = ["A", "B", "C", "D", "E"]
    labels = [options[i % 5] for i in range(n)]
    predictions = [None if i % 7 == 0 else options[(i * 3) % 5] for i in range(n)]
    table = pa.table({
        "instance_id": pa.array([f"q{i:04d}" for i in range(n)], pa.string()),
        "prediction": pa.array(predictions, pa.string()),
        "label": pa.array(labels, pa.string()),
        "correct": pa.array([p == lab for p, lab in zip(predictions, labels)], pa.bool_()),
        "parse_status": pa.array(["no_answer" if p is None else "ok" for p in predictions], pa.string()),
        "raw_output": pa.array([f"풀이... 정답: {p}" if p else "모르겠습니다" for p in predictions], pa.string()),
    })
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def write_score_predictions(path: Path, n: int) -> None:
    caseids = [1 + i // 4 for i in range(n)]
    times = [600 + 30 * (i % 4) for i in range(n)]
    table = pa.table({
        "instance_id": pa.array([f"{c}:{t}" for c, t in zip(caseids, times)], pa.string()),
        "score": pa.array([-(60.0 + (i * 7) % 30) for i in range(n)], pa.float64()),
        "label": pa.array([i % 3 == 0 for i in range(n)], pa.bool_()).cast(pa.int64()),
        "caseid": pa.array(caseids, pa.int64()),
        "subjectid": pa.array([100 + c for c in caseids], pa.int64()),
        "t": pa.array(times, pa.int64()),
    })
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def make_record(data: DataDir, label: str, spec: tuple) -> ResultRecord:
    slug, task, value, eval_date, created_at, parser, contamination = spec
    rid = run_id(label)
    kind = SCORE if task.startswith("vitaldb") else CHOICE
    path = data.predictions_path(rid)
    if kind == CHOICE:
        n = 40
        write_choice_predictions(path, n)
        metrics = [MetricValue("accuracy", value, value - 0.03, value + 0.03), MetricValue("parse_rate", 0.86, 0.8, 0.9)]
        parse_rate: float | None = 0.86
        extras: dict[str, Any] = {"accuracy_by_category": {"내과": value, "외과": value - 0.01}}
        usage = UsageRecord(prompt_tokens=12000, completion_tokens=3000, wall_seconds=42.5, hardware="1x H200")
    else:
        n = 24
        write_score_predictions(path, n)
        metrics = [MetricValue("auroc", value, value - 0.02, value + 0.02), MetricValue("auprc", 0.4, 0.3, 0.5),
                   MetricValue("prevalence", 0.33, 0.33, 0.33)]
        parse_rate = None
        extras = {"roc": {"fpr": [0.0, 0.5, 1.0], "tpr": [0.0, 0.9, 1.0]}, "subjects": 6}
        usage = UsageRecord(prompt_tokens=None, completion_tokens=None, wall_seconds=1.25, hardware="cpu")
    model = MODEL_REFS[slug]
    return ResultRecord(
        run_id=rid, task=task, dataset="vitaldb" if kind == SCORE else "clinicalqa", model=model, tier="baseline",
        demo=False, metrics=metrics, n=n, parse_rate=parse_rate, cost_usd=0.25 if model.type == "llm" else 0.0,
        eval_date=eval_date, created_at=created_at, contamination=contamination,
        config={"decoding": {"temperature": 0.0}, "bootstrap": {"replicates": 100, "seed": 1}},
        versions=Versions(task_spec_hash="t" * 64, model_spec_hash="m" * 64, dataset_snapshot="snap",
                          parser=parser, code_revision="abc1234", libraries={"numpy": "2.4.6"}),
        usage=usage, price_table_date=dt.date(2026, 10, 1),
        predictions_sha256=hashlib.sha256(path.read_bytes()).hexdigest(), extras=extras,
    )


def catalog(data: DataDir, with_late_run: bool = False) -> Catalog:
    runs = dict(RUNS)
    if with_late_run:
        runs[LATE_RUN[0]] = LATE_RUN[1]
    records = [make_record(data, label, spec) for label, spec in runs.items()]
    return Catalog(datasets=DATASETS, tasks=TASKS, models=MODELS, results=records, demo=False)


def distinct_choice_predictions(data: DataDir, records) -> None:
    """Give each clinicalqa@0 result its own correctness (the fixture's files are all alike)."""
    rng = np.random.default_rng(0)
    for k, r in enumerate(x for x in records if x.task == "clinicalqa@0"):
        path = data.predictions_path(r.run_id)
        t = pq.read_table(path)
        correct = rng.random(t.num_rows) < (0.2 + 0.25 * k)
        pq.write_table(t.set_column(t.schema.get_field_index("correct"), "correct", pa.array(correct)), path)


def signed_catalog(data: DataDir, with_late_run: bool = False, today: dt.date | None = None) -> tuple[Catalog, Signer]:
    """The fixture catalog signed as the pipeline signs one (``warehouse.keys.sign_catalog``), with the
    test run's key (``MEDBENCH_SIGNING_KEY``, set by tests/conftest.py), and the manifest's signer."""
    cat = catalog(data, with_late_run)
    return cat, sign_catalog(data, cat, load_key(Path(os.environ[KEY_ENV])), today=today)


def publish_signed(data: DataDir, with_late_run: bool = False, now: dt.datetime | None = None) -> tuple[str, bool]:
    """Publish the fixture catalog signed, as every real publish is: (version, changed). An unsigned
    catalog is other content than a signed one, so a republish of the same results must sign too."""
    cat, sign = signed_catalog(data, with_late_run, today=(now or dt.datetime.now(UTC)).date())
    return publish(data, cat, now=now, sign=sign)


ORIGIN = "medbench.test/log"  # the fixture log's checkpoint origin


def log_everything(root: Path, kept: Path, results=None) -> None:
    """What the publisher does at each publish (docs/transparency-log.md): every result and release of
    the published fixture as a log entry, with a signed checkpoint (``kept``: the publisher's copy)."""
    import os

    from warehouse.keys import KEY_ENV, load_key
    from warehouse.releases import read_releases
    from warehouse.tlog.entries import record_sha256, release_entry, result_entry
    from warehouse.tlog.publisher import append
    from warehouse.tlog.signer import from_signing_key
    from warehouse.tlog.store import LogStore

    data = DataDir(root)
    records = results if results is not None else catalog(data).results
    entries = [result_entry(r.run_id, record_sha256(r)) for r in records]
    entries += [release_entry(r.id, r.manifest_sha256) for r in read_releases(data)]
    append(LogStore.of_data(root), entries, from_signing_key(load_key(Path(os.environ[KEY_ENV]))), ORIGIN, kept)


def publish_fixture(root: Path, with_late_run: bool = False, now: dt.datetime | None = None) -> str:
    """Publish the fixture catalog, signed."""
    return publish_signed(DataDir(root), with_late_run, now or dt.datetime(2026, 10, 29, 12, tzinfo=UTC))[0]






# ---- shapes transcribed from docs/api.md -----------------------------------------------------
MODEL = {"slug": "str", "name": "str", "type": "str", "provider": "str"}
MODEL_FULL = {**MODEL, "provider_model_id": "str", "revision": "str", "release_date": "date?", "knowledge_cutoff": "date?"}
METRIC = {"name": "str", "value": "float", "ci_low": "float", "ci_high": "float", "method": "str", "direction": "str",
          "target": "float?", "replicates_kept": "int",
          "ci_low_items_only": "float?", "ci_high_items_only": "float?"}  # rubric tasks' items-only interval
WITHHELD = [{"name": "str", "reason": "str"}]  # docs/api.md (withheld metrics)
DETECTABLE = "dict?"  # {metric, value, power, alpha, basis}, or null with fewer than two results to pair
ROW = {"rank": "int", "run_id": "str", "task": "str", "model": MODEL, "tier": "str", "metric": METRIC, "n": "int",
       "parse_rate": "float?", "cost_usd": "float", "eval_date": "date", "url": "str", "demo": "bool", "contamination": "bool?",
       "contamination_status": "str", "contamination_basis": "str",
       "rank_low": "int", "rank_high": "int", "tied_with_leader": "bool", "marginal_rank_low": "int",
       "marginal_rank_high": "int", "withheld": WITHHELD}
SUMMARY = {**{k: v for k, v in ROW.items()
              if k not in ("rank", "rank_low", "rank_high", "tied_with_leader", "marginal_rank_low", "marginal_rank_high",
                           "withheld")},
           "status": "str"}  # docs/api.md (status everywhere)
RESULT = {
    **SUMMARY, "model": MODEL_FULL, "metrics": [METRIC], "config": "dict",
    "versions": {"task_spec_hash": "str", "model_spec_hash": "str", "dataset_snapshot": "str", "parser": "str?",
                 "code_revision": "str", "libraries": "dict", "plugins": "list"},
    "usage": {"prompt_tokens": "int?", "completion_tokens": "int?", "wall_seconds": "float", "hardware": "str",
              "answering": "dict?", "judging": "dict?"},  # rubric tasks: answering and judging apart
    "price_table_date": "date", "bibtex": "str", "predictions_url": "str", "predictions_sha256": "str", "superseded_by": "str?",
    "subgroups": "dict", "breakdowns": "dict",
    "provenance": {"submitted_by": "str?", "submission_id": "str?", "package_sha256": "str?", "sandbox": "str?"},
    "status": "str", "withdrawn": "dict?", "supersedes": ["str"],
    "signature": {"key_id": "str", "value": "str", "signed": "str", "signed_at": "str?"},  # docs/api.md, "Signatures"
    "withheld": WITHHELD,
    "judge": "dict?",  # rubric tasks: {model, revision, prompt_sha256, samples}
}
DATASET = {"slug": "str", "name": "str", "license": "str", "license_url": "str", "citation": "str", "doi": "str",
           "public_since": "date", "source": "any"}
TASK = {"slug": "str", "version": "int", "dataset": "str", "kind": "str", "primary_metric": "str", "preview": "bool",
        "n_results": "int", "spec_hash": "str"}
STATS = {"datasets": "int", "tasks": "int", "models": "int", "results": "int", "total_cost_usd": "float", "reuses": "int",
         "warehouse_version": "str", "release": "str?"}
ERROR = {"error": "str", "message": "str"}

# fields this implementation adds (a body may gain fields: docs/api.md); anything else extra is a mistake
ADDITIONS = {
    "summary": {"superseded_by"},
    "result": {"dataset", "extras", "versus_baseline", "breakdowns_caveat", "unparsed_sample", "figures"},
    "dataset": {"description", "snapshot_id"},
    "task": {"ref", "title"},
    "task_detail": {"ref", "title", "description"},
    "stats": {"demo"},
}


def _is_date(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return dt.date.fromisoformat(value).isoformat() == value
    except ValueError:
        return False


_CHECKS = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, float),
    "bool": lambda v: isinstance(v, bool),
    "date": _is_date,
    "dict": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list),
    "any": lambda v: v is not None,
}


def assert_shape(value: Any, shape: Any, where: str = "$", extra: set[str] = frozenset(), nested_extra: dict | None = None) -> None:
    """Assert ``value`` has exactly the contract's fields (plus ``extra``) with the contract's types and nulls."""
    if isinstance(shape, dict):
        assert isinstance(value, dict), f"{where}: expected an object, got {value!r}"
        missing = set(shape) - set(value)
        assert not missing, f"{where}: missing fields {sorted(missing)}"
        unexpected = set(value) - set(shape) - set(extra)
        assert not unexpected, f"{where}: unexpected fields {sorted(unexpected)}"
        for key, sub in shape.items():
            assert_shape(value[key], sub, f"{where}.{key}", (nested_extra or {}).get(key, frozenset()))
        return
    if isinstance(shape, list):
        assert isinstance(value, list), f"{where}: expected a list, got {value!r}"
        for i, item in enumerate(value):
            assert_shape(item, shape[0], f"{where}[{i}]")
        return
    nullable = shape.endswith("?")
    kind = shape.rstrip("?")
    if value is None:
        assert nullable, f"{where}: null where the contract says {kind}"
        return
    assert _CHECKS[kind](value), f"{where}: {value!r} is not a {kind}"
