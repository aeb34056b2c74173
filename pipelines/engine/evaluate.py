"""One evaluation (a task version x a model), from task instances to a published-ready result.

Two steps, mirroring the two partitioned assets: ``make_predictions`` runs the model (or reuses
stored raw outputs) and writes the per-item predictions; ``compute_metrics`` turns predictions
into metrics with seeded bootstrap CIs and writes ``result.json`` last, which is what marks a run
as finished. Rule one applies here too: a run whose ``result.json`` exists is reused, not rerun.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.engine.costs import cost_usd
from pipelines.engine.snapshots import current_snapshot
from pipelines.engine.generations import GenerationStore, generation_key
from pipelines.engine.identity import code_revision, library_versions, run_id
from pipelines.engine.inputs import clinicalqa_items_path, ioh_windows_path
from pipelines.backends.base import Usage
from pipelines.backends.registry import max_new_tokens, text_generator, window_scorer
from pipelines.backends.settings import hashed, published
from pipelines.engine.summary import ScoreSummary
from pipelines.engine.specs import DatasetSpec, ModelSpec, Specs, TaskSpec, spec_hash
from warehouse.files import atomic_write_bytes
from warehouse.layout import DataDir
from warehouse.records import MetricValue, ModelRef, ResultRecord, UsageRecord, Versions, decode_record, encode_record

Log = Callable[[str], None]
TIER = "baseline"


@dataclass(frozen=True)
class Evaluation:
    task: TaskSpec
    model: ModelSpec
    dataset: DatasetSpec
    snapshot_id: str
    run_id: str

    @property
    def partition_key(self) -> str:
        return partition_key(self.task.ref, self.model.slug)


def partition_key(task_ref: str, model_slug: str) -> str:
    return f"{task_ref}|{model_slug}"


def split_partition_key(key: str) -> tuple[str, str]:
    task_ref, _, model_slug = key.partition("|")
    return task_ref, model_slug


def plan(specs: Specs, data: DataDir, task_ref: str, model_slug: str) -> Evaluation:
    task = specs.task(task_ref)
    model = specs.model(model_slug)
    if task.ref not in model.tasks:
        raise ValueError(f"{model.slug} is not evaluated on {task.ref} (its spec lists {model.tasks})")
    snap = current_snapshot(data, task.dataset)
    return Evaluation(task, model, specs.dataset_of(task), snap.snapshot_id, run_id(model, task, snap.snapshot_id))


def existing_result(data: DataDir, run: str) -> ResultRecord | None:
    path = data.result_path(run)
    return decode_record(path.read_bytes()) if path.exists() else None


def _write_parquet(path: Path, table: pa.Table) -> str:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    payload = sink.getvalue().to_pybytes()
    atomic_write_bytes(path, payload)
    return hashlib.sha256(payload).hexdigest()


# --------------------------------------------------------------------------- predictions


class RunInfo(msgspec.Struct):
    """What the predictions step hands to the metrics step (stored beside the predictions)."""

    usage: dict
    config: dict
    generation_key: str | None
    predictions_sha256: str


def _run_info_path(data: DataDir, run: str) -> Path:
    return data.run_dir(run) / "run.json"


def make_predictions(ev: Evaluation, data: DataDir, log: Log) -> RunInfo:
    if ev.task.kind == "choice":
        info = _choice_predictions(ev, data, log)
    else:
        info = _score_predictions(ev, data, log)
    atomic_write_bytes(_run_info_path(data, ev.run_id), msgspec.json.encode(info))
    return info


def _choice_predictions(ev: Evaluation, data: DataDir, log: Log) -> RunInfo:
    from pipelines.tasks.clinicalqa.score import predictions_table
    from pipelines.tasks.clinicalqa.items import prompt_items, template_hash

    settings = ev.task.choice
    assert settings is not None
    items = pq.read_table(clinicalqa_items_path(data, ev.task.ref))
    decoding = {"max_new_tokens": max_new_tokens(ev.model, ev.task), "temperature": settings.temperature}
    key = generation_key({
        "model": ev.model.slug, "revision": ev.model.revision, "backend": ev.model.backend,
        "settings": hashed(ev.model.settings), "prompt_hash": template_hash(settings), "decoding": decoding,
        "snapshot": ev.snapshot_id,
    })
    store = GenerationStore(data.generations(key))
    already = len(store.load())
    if already:
        log(f"{ev.partition_key}: {already}/{len(items)} outputs already stored under generation {key}; resuming")
    generator = text_generator(ev.model, ev.task, data)
    usage: Usage = generator.generate(prompt_items(items), store, log)
    outputs = {iid: g.output for iid, g in store.load().items()}
    table = predictions_table(items, outputs, settings.options, settings.parser)
    sha = _write_parquet(data.predictions_path(ev.run_id), table)
    config = {
        "decoding": decoding, "prompt_hash": template_hash(settings), "parser": settings.parser,
        "backend": ev.model.backend, "backend_settings": published(ev.model.settings),
        "bootstrap": msgspec.to_builtins(ev.task.bootstrap),
    }
    return RunInfo(usage=asdict(usage), config=config, generation_key=key, predictions_sha256=sha)


def _score_predictions(ev: Evaluation, data: DataDir, log: Log) -> RunInfo:
    from pipelines.tasks.vitaldb_ioh.windows import read_windows

    started = time.monotonic()
    scorer = window_scorer(ev.model, ev.task)
    path = ioh_windows_path(data, ev.task.ref)
    train_meta, train_x = read_windows(path, split="train")
    val_meta, val_x = read_windows(path, split="validation")
    test_meta, test_x = read_windows(path, split="test")
    log(f"{ev.partition_key}: fitting on {len(train_meta)} train / {len(val_meta)} validation windows")
    scorer.fit(train_x, train_meta["label"].to_numpy(), val_x, val_meta["label"].to_numpy(),
               seed=ev.task.bootstrap.seed)
    scores = np.asarray(scorer.score(test_x), dtype=np.float64)
    log(f"{ev.partition_key}: scored {len(scores)} test windows")
    table = pa.table({
        "instance_id": pa.array(test_meta["instance_id"].to_list(), pa.string()),
        "score": pa.array(scores, pa.float64()),
        "label": pa.array(test_meta["label"].to_numpy().astype(np.int8), pa.int8()),
        "caseid": pa.array(test_meta["caseid"].to_numpy(), pa.int32()),
        "subjectid": pa.array(test_meta["subjectid"].to_numpy(), pa.int32()),
        "t": pa.array(test_meta["t"].to_numpy(), pa.int32()),
    })
    sha = _write_parquet(data.predictions_path(ev.run_id), table)
    wall = time.monotonic() - started
    usage = Usage(wall_seconds=wall, device_seconds=wall)
    config = {"backend": ev.model.backend, "backend_settings": published(ev.model.settings),
              "bootstrap": msgspec.to_builtins(ev.task.bootstrap), "fit_seed": ev.task.bootstrap.seed,
              "fitted": scorer.describe()}
    return RunInfo(usage=asdict(usage), config=config, generation_key=None, predictions_sha256=sha)


# --------------------------------------------------------------------------- metrics


def compute_metrics(ev: Evaluation, specs: Specs, data: DataDir, log: Log) -> ResultRecord:
    info = msgspec.json.decode(_run_info_path(data, ev.run_id).read_bytes(), type=RunInfo)
    predictions = pq.read_table(data.predictions_path(ev.run_id))
    if ev.task.kind == "choice":
        from pipelines.tasks.clinicalqa.score import summarise_choice

        items = pq.read_table(clinicalqa_items_path(data, ev.task.ref), columns=["instance_id", "category"])
        category_of = dict(zip(items.column("instance_id").to_pylist(), items.column("category").to_pylist()))
        scored = summarise_choice(predictions, [category_of[i] for i in predictions.column("instance_id").to_pylist()],
                                  ev.task.bootstrap)
        summary = ScoreSummary(
            metrics=[tuple(m) for m in scored.metrics], n=scored.n, parse_rate=scored.parse_rate,
            extras={"by_category": [asdict(c) for c in scored.by_category], "parse_status": scored.status_counts},
        )
        parser = ev.task.choice.parser if ev.task.choice else None
    else:
        from pipelines.tasks.vitaldb_ioh.score import score_metrics

        summary = score_metrics(predictions, ev.task.bootstrap)
        parser = None
    usage = Usage(**info.usage)
    record = ResultRecord(
        run_id=ev.run_id, task=ev.task.ref, dataset=ev.dataset.slug, model=model_ref(ev.model), tier=TIER,
        demo=data.kind() == "demo", metrics=[MetricValue(*m) for m in summary.metrics], n=summary.n,
        parse_rate=summary.parse_rate, cost_usd=cost_usd(ev.model, usage, specs.prices),
        eval_date=dt.datetime.now(dt.timezone.utc).date(), created_at=dt.datetime.now(dt.timezone.utc),
        contamination=contamination(ev.model, ev.dataset), config=info.config,
        versions=Versions(task_spec_hash=spec_hash(ev.task), model_spec_hash=spec_hash(ev.model),
                          dataset_snapshot=ev.snapshot_id, parser=parser, code_revision=code_revision(),
                          libraries=library_versions()),
        usage=UsageRecord(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                          wall_seconds=round(usage.wall_seconds, 3), hardware=usage.hardware),
        price_table_date=specs.prices.date, predictions_sha256=info.predictions_sha256,
        generation_key=info.generation_key, extras=summary.extras,
    )
    atomic_write_bytes(data.result_path(ev.run_id), encode_record(record))
    log(f"{ev.partition_key}: {record.primary.name} = {record.primary.value:.4f} "
        f"[{record.primary.ci_low:.4f}, {record.primary.ci_high:.4f}] (run {ev.run_id})")
    return record


def model_ref(model: ModelSpec) -> ModelRef:
    return ModelRef(slug=model.slug, name=model.name, type=model.type, provider=model.provider,
                    provider_model_id=model.provider_model_id, revision=model.revision,
                    release_date=model.release_date, knowledge_cutoff=model.knowledge_cutoff)


def contamination(model: ModelSpec, dataset: DatasetSpec) -> bool | None:
    """True when the model's knowledge cutoff (else its release date) is on/after the dataset went public."""
    when = model.knowledge_cutoff or model.release_date
    if when is None:
        return None
    return when >= dataset.public_since
