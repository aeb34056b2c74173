"""Turn published records into the contract's objects (Row, ResultSummary, Result, Task, ...).

Kept apart from the routes so that the leaderboard, the listing, lookup and the website all show a
result the same way, and apart from ``tables`` because the self-links (``url``,
``predictions_url``, the BibTeX URL) depend on the base URL of each request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from api import schemas
from api.bibtex import result_bibtex
from api.rank_sets import RankEntry
from api.tables import Published, Tables, TaskEntry
from medbench.figures import Figure, flow_steps, valid_figures
from medbench.kind import Kind
from medbench.kinds import kind as kind_of
from medbench.kinds import kinds
from medbench.records import CONTAMINATION_FLAG, MetricValue, ModelRef, ResultRecord, contamination_of, replicates_published


def result_url(base: str, run_id: str) -> str:
    return f"{base}/r/{run_id}"


def predictions_url(base: str, run_id: str) -> str:
    return f"{base}/artifacts/{run_id}/predictions.parquet"


def model(ref: ModelRef) -> schemas.Model:
    return schemas.Model(slug=ref.slug, name=ref.name, type=ref.type, provider=ref.provider)  # type: ignore[arg-type]


def model_detail(ref: ModelRef) -> schemas.ModelDetail:
    return schemas.ModelDetail(
        slug=ref.slug, name=ref.name, type=ref.type, provider=ref.provider,  # type: ignore[arg-type]
        provider_model_id=ref.provider_model_id, revision=ref.revision,
        release_date=ref.release_date, knowledge_cutoff=ref.knowledge_cutoff,
    )


def _usage_part(part: Any) -> schemas.UsagePart | None:
    return part  # the record's own UsagePart (api.schemas reuses it)


def _replicates(r: ResultRecord) -> int | None:
    """The bootstrap replicates the result's task drew (its config), for a record that did not count
    them per metric (written before ``replicates_kept`` was recorded)."""
    boot = r.config.get("bootstrap") if isinstance(r.config, dict) else None
    return boot.get("replicates") if isinstance(boot, dict) and isinstance(boot.get("replicates"), int) else None


def metric(m: MetricValue, r: ResultRecord) -> schemas.Metric:
    """A metric with its interval method; a result written before methods were recorded gets its
    kind's (``Kind.legacy_method``), the kind told by the record itself: a parse rate is recorded
    exactly by the kinds that parse replies (``Kind.parses_replies``)."""
    method = m.method or legacy_method(r)
    return schemas.Metric(name=m.name, value=m.value, ci_low=m.ci_low, ci_high=m.ci_high, method=method,
                          direction=m.direction, target=m.target,  # type: ignore[arg-type]
                          replicates_kept=replicates_published(method, m.replicates_kept, _replicates(r)),
                          ci_low_items_only=m.ci_low_items_only,
                          ci_high_items_only=m.ci_high_items_only)


BREAKDOWNS_CAVEAT = ("Per-group 95% intervals, not simultaneous ones: with many groups some interval misses "
                     "its group's true accuracy by chance alone, and the highest and lowest groups are the "
                     "likeliest to be extreme by chance. Compare groups only with a correction for multiplicity.")


def subgroups(r: ResultRecord) -> dict[str, list[schemas.Subgroup]]:
    return {name: [schemas.Subgroup(group=g.group, n=g.n, n_subjects=g.n_subjects,
                                    metrics=[metric(m, r) for m in g.metrics], caveat=g.caveat,
                                    replicates_kept=g.replicates_kept or 0, withheld_reason=g.withheld_reason)
                   for g in rows]
            for name, rows in r.subgroups.items()}


def breakdowns(r: ResultRecord) -> dict[str, list[schemas.Breakdown]]:
    return {name: [schemas.Breakdown(group=b.group, n=b.n, metric=metric(b.metric, r)) for b in rows]
            for name, rows in r.breakdowns.items()}


def legacy_method(r: ResultRecord) -> str:
    """The interval method of a result published before methods were recorded."""
    parsed = r.parse_rate is not None
    return next(k.legacy_method for k in kinds().values() if k.parses_replies == parsed)


def _contamination(r: ResultRecord) -> dict[str, object]:
    """The flag, the status and its basis; the flag derived from the status (also for a result
    written before statuses, ``contamination_of``)."""
    status, basis = contamination_of(r)
    return {"contamination": CONTAMINATION_FLAG[status], "contamination_status": status, "contamination_basis": basis}


def provenance(r: ResultRecord) -> schemas.Provenance:
    """Who stands behind the result (all null for medbench's own runs)."""
    return r.provenance  # the record's own Struct (api.schemas reuses it)


def row(p: Published, base: str, rank: int, entry: RankEntry | None = None, by: str | None = None) -> schemas.Row:
    """A leaderboard row ranked by metric ``by`` (default the primary), its rank set ``entry`` from
    ``api.rank_sets.rank_entry`` (none: the point [rank, rank])."""
    r = p.record
    e = entry if entry is not None else RankEntry(rank, rank, rank, rank == 1, rank, rank, "")
    shown = (r.metric(by) if by is not None else None) or r.primary
    return schemas.Row(
        rank=rank, rank_low=e.low, rank_high=e.high, tied_with_leader=e.tied, marginal_rank_low=e.marginal_low,
        marginal_rank_high=e.marginal_high, run_id=r.run_id, task=r.task, model=model(r.model), tier=r.tier,  # type: ignore[arg-type]
        metric=metric(shown, r), n=r.n, parse_rate=r.parse_rate, cost_usd=r.cost_usd, eval_date=r.eval_date,
        url=result_url(base, r.run_id), demo=r.demo, **_contamination(r), withheld=withheld(r),
    )


def withheld(r: ResultRecord) -> list[schemas.Withheld]:
    """The metrics the validity gate kept from publication (medbench.stats.validity), with why."""
    return list(r.withheld)  # the record's own Structs (api.schemas reuses them)


def summary(p: Published, base: str) -> schemas.ResultSummary:
    r = p.record
    return schemas.ResultSummary(
        run_id=r.run_id, task=r.task, model=model(r.model), tier=r.tier,  # type: ignore[arg-type]
        metric=metric(r.primary, r), n=r.n, parse_rate=r.parse_rate, cost_usd=r.cost_usd, eval_date=r.eval_date,
        url=result_url(base, r.run_id), demo=r.demo, **_contamination(r), superseded_by=p.superseded_by,
        status=p.status,  # type: ignore[arg-type]
    )


def _kind_or_none(name: str | None) -> Kind | None:
    """The task's kind, None for a kind this server does not know (its result still serves, plainly)."""
    if name is None:
        return None
    try:
        return kind_of(name)
    except (KeyError, ValueError, ImportError):
        return None


def result(p: Published, base: str, dataset: schemas.Dataset | None,
           versus: schemas.BaselineComparison | None = None, supersedes: tuple[str, ...] = (),
           kind_name: str | None = None) -> schemas.Result:
    """``kind_name``: the task's kind, which reads its extras (figures, the unparsed sample): no
    module of the API reads an extras key by name."""
    r = p.record
    strategy = _kind_or_none(kind_name)
    withdrawn = p.withdrawn
    url = result_url(base, r.run_id)
    return schemas.Result(
        run_id=r.run_id, task=r.task, model=model_detail(r.model), tier=r.tier,  # type: ignore[arg-type]
        metric=metric(r.primary, r), n=r.n, parse_rate=r.parse_rate, cost_usd=r.cost_usd, eval_date=r.eval_date,
        url=url, demo=r.demo, **_contamination(r),
        metrics=[metric(m, r) for m in r.metrics],
        config=r.config,
        versions=schemas.Versions(
            task_spec_hash=r.versions.task_spec_hash, model_spec_hash=r.versions.model_spec_hash,
            dataset_snapshot=r.versions.dataset_snapshot, parser=r.versions.parser,
            code_revision=r.versions.code_revision, libraries=dict(r.versions.libraries),
            plugins=list(r.versions.plugins),
        ),
        usage=schemas.Usage(
            prompt_tokens=r.usage.prompt_tokens, completion_tokens=r.usage.completion_tokens,
            wall_seconds=r.usage.wall_seconds, hardware=r.usage.hardware,
            answering=_usage_part(r.usage.answering), judging=_usage_part(r.usage.judging),
        ),
        judge=schemas.Judge(**msgspec.structs.asdict(r.judge)) if r.judge is not None else None,
        price_table_date=r.price_table_date,
        bibtex=result_bibtex(r, url, dataset.citation if dataset else None, dataset.doi if dataset else None),
        predictions_url=predictions_url(base, r.run_id),
        predictions_sha256=r.predictions_sha256,
        superseded_by=p.superseded_by,
        dataset=r.dataset,
        extras=strategy.served_extras(r.extras) if strategy else dict(r.extras),
        versus_baseline=versus,
        subgroups=subgroups(r),
        breakdowns=breakdowns(r),
        breakdowns_caveat=BREAKDOWNS_CAVEAT if r.breakdowns else None,
        unparsed_sample=unparsed(strategy, r),
        figures=figures(strategy, r),
        provenance=provenance(r),
        status=p.status,  # type: ignore[arg-type]
        withdrawn=schemas.Withdrawn(reason=withdrawn["reason"], date=withdrawn["date"]) if withdrawn else None,  # type: ignore[arg-type]
        supersedes=list(supersedes),
        signature=signature(p.signature),
        withheld=withheld(r),
    )


def signature(found: Mapping[str, str] | None) -> schemas.Signature | None:
    """A stored signature (``warehouse.signing``) as the contract's object."""
    if not found:
        return None
    return schemas.Signature(key_id=found["key_id"], value=found["value"], signed=found["signed"],
                             signed_at=found.get("signed_at"))


def unparsed(strategy: Kind | None, r: ResultRecord) -> list[schemas.UnparsedOutput] | None:
    """The unparsed sample a kind that parses replies keeps in its extras, served as a field of its own."""
    sample = strategy.unparsed_sample(r.extras) if strategy else None
    if sample is None:
        return None
    return [schemas.UnparsedOutput(instance_id=i, output=o) for i, o in sample]


def figures(strategy: Kind | None, r: ResultRecord) -> list[Figure]:
    """The figures the task's kind declares for this result (``medbench.figures``), those
    that can be drawn; any failure of a kind's declaration is no figure rather than no page."""
    if strategy is None:
        return []
    try:
        declared = strategy.figures(r.extras, {m.name: m.value for m in r.metrics})
    except (KeyError, TypeError, ValueError, AttributeError):
        return []
    return valid_figures(declared)


def stats(tables: Tables, reuses: int) -> schemas.Stats:
    """The counts of ``/v1/stats`` (the home and about pages show the same object)."""
    return schemas.Stats(
        datasets=len(tables.datasets), tasks=len(tables.tasks), models=tables.model_count, results=len(tables.results),
        total_cost_usd=tables.total_cost_usd, reuses=reuses, warehouse_version=tables.version, demo=tables.demo,
        release=tables.release or tables.version,
    )


def task(t: TaskEntry) -> schemas.Task:
    return schemas.Task(
        slug=t.slug, version=t.version, dataset=t.dataset, kind=t.kind, primary_metric=t.primary_metric,
        preview=t.preview, n_results=t.n_results, spec_hash=t.spec_hash, ref=t.ref, title=t.title,
    )


def task_detail(t: TaskEntry, detectable: schemas.DetectableDifference | None = None) -> schemas.TaskDetail:
    return schemas.TaskDetail(
        slug=t.slug, version=t.version, dataset=t.dataset, kind=t.kind, primary_metric=t.primary_metric,
        preview=t.preview, n_results=t.n_results, spec_hash=t.spec_hash, ref=t.ref, title=t.title,
        description=t.description, spec=dict(t.spec), participant_flow=flow_steps(t.participant_flow),
        detectable_difference=detectable,
    )
