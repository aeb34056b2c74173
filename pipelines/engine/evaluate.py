"""One evaluation (a task version x a model), from task instances to a published-ready result.

Task-agnostic: resolve -> predict -> score, each step delegated to the task's family, which
``resolve_evaluation`` takes from the specs' plug-ins (``Specs.plugins``) and hands on in the
``Evaluation``. Two steps mirror the two partitioned assets: ``make_predictions`` has the generic
solver of the family's problem run the model (or reuse stored raw outputs,
``pipelines.engine.solvers``) and writes the per-item predictions Parquet and ``run.json``;
``compute_metrics`` has the family turn the predictions into metrics with seeded bootstrap CIs and
typed extras, and writes ``result.json`` last, which is what marks a run as finished. Rule one
applies here too: a run whose ``result.json`` exists is reused, not rerun.

Both steps hold the partition's lock (``pipelines.engine.locks``), so a second materialization
of the same run waits for the first and then reuses its predictions and its result instead of
paying for them again, however either was launched.

Its file name is shared on purpose: the engine's step of that name; the Dagster assets, the official
tier and the CLI have their own module for the same step, each calling this one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path
from typing import Callable

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from medbench.evaluation import Evaluation, partition_key, split_partition_key
from medbench.outcomes import CheckOutcome, Predicted, Usage
from pipelines.engine.costs import cost_usd
from pipelines.engine.snapshots import current_snapshot
from pipelines.engine.identity import code_revision, library_versions, run_id
from pipelines.engine.inputs import task_instances_path
from pipelines.engine.locks import evaluation_lock, newer, written_since
from pipelines.engine.plugin_identity import plugin_versions
from pipelines.engine.solvers import solve
from pipelines.engine.specs import DatasetSpec, ModelSpec, Specs, spec_hash
from medbench.kinds import kind as kind_of
from medbench.files import atomic_write_bytes
from medbench.layout import DataDir
from medbench.records import (CONTAMINATION_FLAG, ContaminationStatus, JudgeRef, MetricValue, ModelRef, Provenance,
                               ResultRecord, UsagePart, UsageRecord, Versions, Withheld, decode_record, encode_record,
                               PluginVersion, replicates_published)

Log = Callable[[str], None]
TIER = "baseline"

__all__ = ["Evaluation", "partition_key", "split_partition_key", "resolve_evaluation", "existing_result", "make_predictions",
           "prediction_checks", "compute_metrics"]


def resolve_evaluation(specs: Specs, data: DataDir, task_ref: str, model_slug: str, judge: str | None = None) -> Evaluation:
    """The evaluation of ``model_slug`` on ``task_ref``; ``judge``: grade with this model instead of the
    task spec's judge (a task graded by a judge model only; the stored answers are reused)."""
    task = specs.task(task_ref)
    model = specs.model(model_slug)
    if task.ref not in model.tasks:
        raise ValueError(f"{model.slug} is not evaluated on {task.ref} (its spec lists {model.tasks})")
    snap = current_snapshot(data, task.dataset)
    family, backend = specs.family_of(task), specs.backend_of(model)
    plugins = tuple(plugin_versions([family, specs.plugins.datasets.get(task.dataset), kind_of(family.kind),
                                     backend]))
    judge_slug = family.judge(task, data.demo_or_real() == "demo")
    if judge is not None and judge_slug is None:
        raise ValueError(f"{task.ref} is not graded by a judge model: leave out the judge")
    judge_spec = specs.model(judge or judge_slug) if judge_slug is not None else None
    return Evaluation(task, model, specs.dataset_of(task), snap.snapshot_id,
                      run_id(model, task, snap.snapshot_id, plugins=plugins, judge=judge_spec), family, backend,
                      plugins, judge_spec, specs.backend_of(judge_spec) if judge_spec is not None else None)


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
    """Have the family predict the instances; write the predictions Parquet, then ``run.json``.

    Under the partition's lock; when it had to wait, what the holder wrote meanwhile is reused."""
    with evaluation_lock(data, ev.run_id, log) as held:
        info_path = _run_info_path(data, ev.run_id)
        if held.waited and written_since(info_path, held.asked_at) and data.predictions_path(ev.run_id).exists():
            log(f"{ev.partition_key}: reusing the predictions the other evaluation just made (run {ev.run_id})")
            return msgspec.json.decode(info_path.read_bytes(), type=RunInfo)
        return _make_predictions(ev, data, log)


def _make_predictions(ev: Evaluation, data: DataDir, log: Log) -> RunInfo:
    return write_predictions(ev, data, solve(ev, task_instances_path(data, ev.task, ev.family), data, log))


def write_predictions(ev: Evaluation, data: DataDir, predicted: Predicted) -> RunInfo:
    """Write the predictions Parquet (in the family's schema, or ValueError), then ``run.json``;
    the metrics step reads both (medbench's own runs and official packages alike)."""
    if not predicted.table.schema.equals(ev.family.predictions_schema):
        raise ValueError(f"{ev.partition_key}: family {ev.task.family!r} predicted a table with schema "
                         f"{predicted.table.schema}, not its predictions_schema {ev.family.predictions_schema}")
    sha = _write_parquet(data.predictions_path(ev.run_id), predicted.table)
    info = RunInfo(usage=predicted.usage, config=predicted.config, generation_key=predicted.generation_key,
                   predictions_sha256=sha)
    atomic_write_bytes(_run_info_path(data, ev.run_id), msgspec.json.encode(info))
    return info


def prediction_checks(ev: Evaluation, data: DataDir) -> list[CheckOutcome]:
    """The family's checks on this evaluation's predictions (every instance once, finite scores, parse rate)."""
    instances = task_instances_path(data, ev.task, ev.family)
    predictions = pq.read_table(data.predictions_path(ev.run_id))
    return ev.family.prediction_checks(ev.task, predictions, ev.family.expected_ids(ev.task, instances))


# --------------------------------------------------------------------------- metrics


def compute_metrics(ev: Evaluation, specs: Specs, data: DataDir, log: Log, *, tier: str = TIER,
                    provenance: Provenance | None = None) -> ResultRecord:
    """Score the stored predictions and write ``result.json``, under the partition's lock.

    A result already computed from exactly these predictions (written after ``run.json``, same
    predictions sha256, same code revision) is returned as it is: a second run that waited for the
    first does not write a second result."""
    with evaluation_lock(data, ev.run_id, log):
        done = existing_result(data, ev.run_id)
        if (done is not None and newer(data.result_path(ev.run_id), _run_info_path(data, ev.run_id))
                and done.predictions_sha256 == _stored_info(data, ev.run_id).predictions_sha256
                and done.versions.code_revision == code_revision()):
            log(f"{ev.partition_key}: run {ev.run_id} was just scored from these predictions; reusing its result")
            return done
        return _compute_metrics(ev, specs, data, log, tier, provenance or Provenance())


def _stored_info(data: DataDir, run: str) -> RunInfo:
    return msgspec.json.decode(_run_info_path(data, run).read_bytes(), type=RunInfo)


def _compute_metrics(ev: Evaluation, specs: Specs, data: DataDir, log: Log, tier: str,
                     provenance: Provenance) -> ResultRecord:
    info = msgspec.json.decode(_run_info_path(data, ev.run_id).read_bytes(), type=RunInfo)
    predictions = pq.read_table(data.predictions_path(ev.run_id))
    summary = ev.family.score(ev.task, predictions, task_instances_path(data, ev.task, ev.family))
    parser = ev.family.parser_version(ev.task)
    parts = {k: info.usage[k] for k in ("answering", "judging") if isinstance(info.usage.get(k), dict)}
    usage = Usage(**{k: v for k, v in info.usage.items() if k not in parts})
    cost = cost_usd(ev.model, usage, specs.prices)
    answering = judging = judge_ref = None
    if ev.judge is not None and parts:  # a judged task: the answering and the judging apart, cost their sum
        answering = _part(Usage(**parts["answering"]), cost_usd(ev.model, Usage(**parts["answering"]), specs.prices))
        judging = _part(Usage(**parts["judging"]), cost_usd(ev.judge, Usage(**parts["judging"]), specs.prices))
        cost = round(answering.cost_usd + judging.cost_usd, 6)
    if ev.judge is not None and isinstance(info.config.get("judge"), dict):
        j = info.config["judge"]
        judge_ref = JudgeRef(model=j["model"], revision=j["revision"], prompt_sha256=j["prompt_sha256"],
                             samples=int(j["samples"]))
    record = ResultRecord(
        run_id=ev.run_id, task=ev.task.ref, dataset=ev.dataset.slug, model=model_ref(ev.model), tier=tier,
        demo=data.demo_or_real() == "demo", metrics=[_counted(MetricValue(*m), ev) for m in summary.metrics], n=summary.n,
        parse_rate=summary.parse_rate, cost_usd=cost,
        eval_date=dt.datetime.now(dt.timezone.utc).date(), created_at=dt.datetime.now(dt.timezone.utc),
        contamination=contamination(ev.model, ev.dataset), contamination_basis=contamination_basis(ev.model, ev.dataset),
        contamination_status=contamination_verdict(ev.model, ev.dataset)[0],
        config=info.config,
        versions=Versions(task_spec_hash=spec_hash(ev.task), model_spec_hash=spec_hash(ev.model),
                          dataset_snapshot=ev.snapshot_id, parser=parser, code_revision=code_revision(),
                          libraries=library_versions(), plugins=[PluginVersion(**p) for p in ev.plugins]),
        usage=UsageRecord(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                          wall_seconds=round(usage.wall_seconds, 3), hardware=usage.hardware,
                          answering=answering, judging=judging),
        price_table_date=specs.prices.date, predictions_sha256=info.predictions_sha256,
        generation_key=info.generation_key, extras=summary.extras_json(),
        subgroups=summary.subgroups, breakdowns=_counted_breakdowns(summary.breakdowns, ev), provenance=provenance,
        withheld=[Withheld(name, why) for name, why in summary.withheld], judge=judge_ref,
    )
    atomic_write_bytes(data.result_path(ev.run_id), encode_record(record))
    log(f"{ev.partition_key}: {record.primary.name} = {record.primary.value:.4f} "
        f"[{record.primary.ci_low:.4f}, {record.primary.ci_high:.4f}] (run {ev.run_id})")
    return record


def _counted(m: MetricValue, ev: Evaluation) -> MetricValue:
    """The metric with ``replicates_kept`` an int: its own count, the task's replicates for a
    bootstrap interval that did not count them (every replicate defines a mean), 0 for an analytic one."""
    kept = replicates_published(m.method, m.replicates_kept, ev.task.bootstrap.replicates)
    return m if kept == m.replicates_kept else msgspec.structs.replace(m, replicates_kept=kept)


def _counted_breakdowns(breakdowns: dict[str, list], ev: Evaluation) -> dict[str, list]:
    return {name: [msgspec.structs.replace(b, metric=_counted(b.metric, ev)) for b in rows]
            for name, rows in breakdowns.items()}


def _part(usage: Usage, cost: float) -> UsagePart:
    return UsagePart(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                     wall_seconds=round(usage.wall_seconds, 3), cost_usd=cost)


def model_ref(model: ModelSpec) -> ModelRef:
    return ModelRef(slug=model.slug, name=model.name, type=model.type, provider=model.provider,
                    provider_model_id=model.provider_model_id, revision=model.revision,
                    release_date=model.release_date, knowledge_cutoff=model.knowledge_cutoff)


def declares(model: ModelSpec, dataset: DatasetSpec) -> str | None:
    """The model's ``training_data`` entry naming ``dataset``, if any: its slug, DOI (bare or as a
    doi.org link), name or source location (a Hugging Face id), compared without case."""
    names = {dataset.slug, dataset.doi, dataset.name, dataset.source.location}
    wanted = {n.strip().casefold() for n in names if n}
    for entry in model.training_data:
        bare = entry.strip().casefold().removeprefix("https://doi.org/").removeprefix("doi:")
        if bare in wanted:
            return entry
    return None


def contamination_verdict(model: ModelSpec, dataset: DatasetSpec) -> tuple[ContaminationStatus, str]:
    """(status, basis in words). An authors' declaration of training on the dataset decides first
    (``declared``). Else the knowledge cutoff, which must be the model's own training data's,
    fine-tuning included (a base model's cutoff says nothing of later fine-tuning data, so specs
    never carry one): on/after the date the data went public is ``possible``, before is
    ``unlikely``. Else the release date: a model released before the data went public cannot have
    trained on it (``unlikely``); one released on/after may have (``possible``). Else ``unknown``."""
    public = f"{dataset.slug} went public ({dataset.public_since})"
    entry = declares(model, dataset)
    if entry is not None:
        return "declared", f"the model's authors declare training on {dataset.slug} (training_data: {entry!r})"
    if model.knowledge_cutoff is not None:
        if model.knowledge_cutoff >= dataset.public_since:
            return "possible", f"knowledge cutoff {model.knowledge_cutoff} is on or after {public}"
        return "unlikely", f"knowledge cutoff {model.knowledge_cutoff} is before {public}"
    if model.release_date is not None:
        if model.release_date < dataset.public_since:
            return "unlikely", f"no knowledge cutoff is stated; released {model.release_date}, before {public}"
        return "possible", f"no knowledge cutoff is stated; released {model.release_date}, on or after {public}"
    return "unknown", "no training data declared, and no knowledge cutoff or release date is known for the model"


def contamination_basis(model: ModelSpec, dataset: DatasetSpec) -> str:
    """What decided the contamination status, in words (``contamination_verdict``)."""
    return contamination_verdict(model, dataset)[1]


def contamination(model: ModelSpec, dataset: DatasetSpec) -> bool | None:
    """The flag existing clients read: true for declared or possible, false for unlikely, None for unknown."""
    return CONTAMINATION_FLAG[contamination_verdict(model, dataset)[0]]
