"""A published warehouse shaped like a real one, for the API benchmarks (no pipeline, no network).

Each model has one result on each of the two p0 tasks, with the metrics, CIs, configuration,
versions, usage and extras the pipeline records (all categories of clinicalqa, ROC points of
vitaldb-ioh), one predictions file per run, and every tenth model an older run that a parser change
superseded. Published with the real ``warehouse.publish``; values come from a seeded generator.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from medbench.layout import DataDir
from warehouse.publish import Catalog, publish
from medbench.records import MetricValue, ModelRef, ResultRecord, UsageRecord, Versions

UTC = dt.timezone.utc
SEED = 20261202
PROVIDERS = ("kgpu", "openai", "hf", "google", "medbench")
CATEGORIES = ("내과", "외과", "소아과", "산부인과", "정신과", "응급의학과")
CHOICE_TASK, SCORE_TASK = "clinicalqa@0", "vitaldb-ioh@0"

DATASETS = [
    {"slug": "clinicalqa", "name": "ClinicalQA", "license": "CC BY 4.0",
     "license_url": "https://creativecommons.org/licenses/by/4.0/",
     "citation": "SNUH-HARI. ClinicalQA: Korean Medical Knowledge QA Benchmark. 2025.", "doi": "10.23421/2026.0800",
     "public_since": dt.date(2025, 4, 4), "description": "Korean five-option clinical questions.",
     "source": {"kind": "huggingface", "location": "snuh/ClinicalQA", "split": "train", "revision": "29bdc90"},
     "snapshot_id": "a" * 16},
    {"slug": "vitaldb", "name": "VitalDB", "license": "CC BY 4.0",
     "license_url": "https://creativecommons.org/licenses/by/4.0/",
     "citation": "Lee HC et al. VitalDB, a high-fidelity multi-parameter vital signs database. Sci Data. 2022;9:279.",
     "doi": "10.1038/s41597-022-01411-5", "public_since": dt.date(2022, 6, 8),
     "description": "Intraoperative vital signs.",
     "source": {"kind": "vitaldb-api", "location": "https://api.vitaldb.net", "split": "", "revision": "content-hash"},
     "snapshot_id": "b" * 16},
]


def _task(slug: str, dataset: str, kind: str, metric: str) -> dict:
    spec = {"slug": slug, "version": 0, "dataset": dataset, "kind": kind, "primary_metric": metric, "preview": True,
            "bootstrap": {"replicates": 1000, "seed": 20260401}, "prompt": {"template": "...", "max_new_tokens": 2048}}
    return {"slug": slug, "version": 0, "dataset": dataset, "kind": kind, "title": f"{slug} v0", "primary_metric": metric,
            "preview": True, "spec_hash": hashlib.sha256(repr(spec).encode()).hexdigest(), "spec": spec,
            "description": f"The {slug} task, version 0."}


TASKS = [_task("clinicalqa", "clinicalqa", "choice", "accuracy"), _task("vitaldb-ioh", "vitaldb", "score", "auroc")]


def _model(i: int) -> ModelRef:
    provider = PROVIDERS[i % len(PROVIDERS)]
    kind = ("llm", "llm", "ml", "rule")[i % 4]
    return ModelRef(slug=f"{provider}/model-{i:04d}", name=f"Model {i}", type=kind, provider=provider,
                    provider_model_id=f"model-{i:04d}", revision=hashlib.sha1(str(i).encode()).hexdigest(),
                    release_date=dt.date(2025, 1, 1) + dt.timedelta(days=i), knowledge_cutoff=None)


def _predictions(path: Path, choice: bool, rng: random.Random, n: int = 50) -> str:
    if choice:
        labels = [rng.choice("ABCDE") for _ in range(n)]
        predictions = [rng.choice("ABCDE") for _ in range(n)]
        table = pa.table({"instance_id": [f"q{i:04d}" for i in range(n)], "prediction": predictions, "label": labels,
                          "correct": [p == t for p, t in zip(predictions, labels, strict=True)], "parse_status": ["ok"] * n,
                          "raw_output": [f"풀이 ... 정답: {p}" for p in predictions]})
    else:
        table = pa.table({"instance_id": [f"{1 + i // 5}:{600 + 30 * (i % 5)}" for i in range(n)],
                          "score": [rng.uniform(-120, -40) for _ in range(n)],
                          "label": [int(rng.random() < 0.2) for _ in range(n)], "caseid": [1 + i // 5 for i in range(n)],
                          "subjectid": [100 + i // 5 for i in range(n)], "t": [600 + 30 * (i % 5) for i in range(n)]})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _record(data: DataDir, model: ModelRef, task: str, created: dt.datetime, parser: str, rng: random.Random) -> ResultRecord:
    choice = task == CHOICE_TASK
    run_id = hashlib.sha256(f"{model.slug}|{task}|{parser}".encode()).hexdigest()[:12]
    sha = _predictions(data.predictions_path(run_id), choice, rng)
    value = rng.uniform(0.2, 0.8) if choice else rng.uniform(0.7, 0.95)
    if choice:
        metrics = [MetricValue("accuracy", value, value - 0.028, value + 0.027),
                   MetricValue("parse_rate", 0.97, 0.96, 0.98)]
        metrics += [MetricValue(f"accuracy[{c}]", value + rng.uniform(-0.05, 0.05), value - 0.1, value + 0.1) for c in CATEGORIES]
        extras: dict = {"accuracy_by_category": {c: round(value + rng.uniform(-0.05, 0.05), 4) for c in CATEGORIES}}
        usage = UsageRecord(prompt_tokens=rng.randint(300_000, 900_000), completion_tokens=rng.randint(100_000, 600_000),
                            wall_seconds=rng.uniform(100, 4000), hardware="1x NVIDIA H200")
        n, parse_rate = 1045, 0.97
    else:
        metrics = [MetricValue("auroc", value, value - 0.01, value + 0.01),
                   MetricValue("auprc", value / 2, value / 2 - 0.02, value / 2 + 0.02),
                   MetricValue("prevalence", 0.08, 0.08, 0.08)]
        extras = {"roc": {"fpr": [i / 50 for i in range(51)], "tpr": [min(1.0, (i / 50) ** 0.3) for i in range(51)]},
                  "subjects": 1218, "dropped_replicates": 0}
        usage = UsageRecord(prompt_tokens=None, completion_tokens=None, wall_seconds=rng.uniform(5, 300), hardware="cpu")
        n, parse_rate = 384_211, None
    return ResultRecord(
        run_id=run_id, task=task, dataset="clinicalqa" if choice else "vitaldb", model=model, tier="baseline", demo=False,
        metrics=metrics, n=n, parse_rate=parse_rate, cost_usd=round(rng.uniform(0, 40), 2) if model.type == "llm" else 0.0,
        eval_date=created.date(), created_at=created, contamination=rng.choice([True, False, None]),
        config={"decoding": {"temperature": 0.0, "max_new_tokens": 2048}, "prompt_hash": "c" * 64,
                "backend": {"name": "vllm", "tensor_parallel_size": 1}, "bootstrap": {"replicates": 1000, "seed": 20260401}},
        versions=Versions(task_spec_hash="d" * 64, model_spec_hash="e" * 64, dataset_snapshot="a" * 16,
                          parser=parser if choice else None, code_revision="4154f21",
                          libraries={"numpy": "2.4.6", "duckdb": "2.0.1", "vllm": "0.32.0"}),
        usage=usage, price_table_date=dt.date(2026, 10, 1), predictions_sha256=sha, extras=extras,
    )


def build_catalog(data: DataDir, n_models: int) -> Catalog:
    rng = random.Random(SEED)
    models = [_model(i) for i in range(n_models)]
    start = dt.datetime(2026, 10, 1, 9, tzinfo=UTC)
    results = []
    for i, model in enumerate(models):
        created = start + dt.timedelta(hours=i)
        if i % 10 == 0:  # an older run replaced after a parser change
            results.append(_record(data, model, CHOICE_TASK, created - dt.timedelta(days=3), "v1", rng))
        results.append(_record(data, model, CHOICE_TASK, created, "v2", rng))
        results.append(_record(data, model, SCORE_TASK, created, "v2", rng))
    model_rows = [
        {"slug": m.slug, "name": m.name, "type": m.type, "provider": m.provider, "provider_model_id": m.provider_model_id,
         "revision": m.revision, "release_date": m.release_date, "knowledge_cutoff": m.knowledge_cutoff, "backend": "vllm",
         "description": m.name, "spec_hash": hashlib.sha256(m.slug.encode()).hexdigest(), "spec": {"slug": m.slug}}
        for m in models
    ]
    return Catalog(datasets=DATASETS, tasks=TASKS, models=model_rows, results=results, demo=False)


def publish_synthetic(root: Path, n_models: int) -> tuple[DataDir, Catalog, str]:
    """Publish a warehouse of ``n_models`` models (about 2.1 results each) into ``root``."""
    data = DataDir(root)
    catalog = build_catalog(data, n_models)
    version, _ = publish(data, catalog, now=dt.datetime(2026, 12, 1, 12, tzinfo=UTC))
    log_synthetic(data, catalog)
    return data, catalog, version


def log_synthetic(data: DataDir, catalog: Catalog) -> None:
    """The transparency log of the synthetic warehouse, as a publish writes it (every result and
    release an entry, one signed checkpoint), so the proof routes can be measured
    (docs/transparency-log.md). Signed with a throwaway key; the kept checkpoint lies beside the
    data directory, one per directory (``<name>.log-checkpoint``): a run builds several (the small
    board and the larger one of ``--results``) in one scratch folder, and a shared copy would make the
    second's new, empty log look truncated."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from warehouse.releases import read_releases
    from warehouse.tlog.entries import record_sha256, release_entry, result_entry
    from warehouse.tlog.publisher import append
    from warehouse.tlog.signer import Ed25519NoteSigner
    from warehouse.tlog.store import LogStore

    entries = [result_entry(r.run_id, record_sha256(r)) for r in catalog.results]
    entries += [release_entry(r.id, r.manifest_sha256) for r in read_releases(data)]
    append(LogStore.of_data(data.root), entries, Ed25519NoteSigner(Ed25519PrivateKey.generate()), "medbench.bench/log",
           data.root.parent / f"{data.root.name}.log-checkpoint")
