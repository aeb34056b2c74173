"""The catalog's rows that come from the specs, not from results: datasets, tasks and models, and the
model rows kept for results whose model spec was removed.

Both publish paths need them: the whole-catalog publish (``pipelines.engine.release``) and the
publish of a change (``pipelines.engine.release_change``), which the first calls; they live here so
neither imports the other's module back (docs/concepts.md, "How a publish costs the change").
"""

from __future__ import annotations

from medbench.layout import DataDir
from medbench.records import ResultRecord
from pipelines.engine.snapshots import NotMaterialized, current_snapshot
from pipelines.engine.specs import Specs, spec_builtins, spec_hash


def spec_rows(specs: Specs, data: DataDir) -> tuple[list[dict], list[dict], list[dict]]:
    """The datasets', tasks' and models' rows (from the specs: one row each, no result read)."""
    demo = data.demo_or_real() == "demo"
    datasets = []
    for d in specs.datasets.values():
        row = spec_builtins(d)
        row["public_since"] = d.public_since
        try:
            row["snapshot_id"] = current_snapshot(data, d.slug).snapshot_id
        except NotMaterialized:
            row["snapshot_id"] = None
        datasets.append(row)
    tasks = [
        {"slug": t.slug, "version": t.version, "dataset": t.dataset, "kind": t.kind, "title": t.title,
         "description": t.description, "primary_metric": t.primary_metric, "preview": t.preview,
         "spec_hash": spec_hash(t), "spec": spec_builtins(t), "cluster_column": specs.family_of(t).cluster_column,
         **participant_flow_row(data, specs, t)}
        for t in specs.tasks.values()
    ]
    models = [
        {"slug": m.slug, "name": m.name, "type": m.type, "provider": m.provider,
         "provider_model_id": m.provider_model_id, "revision": m.revision, "release_date": m.release_date,
         "knowledge_cutoff": m.knowledge_cutoff, "backend": m.backend, "description": m.description,
         "spec_hash": spec_hash(m), "spec": published_spec(m, specs.backend_of(m))}
        for m in specs.models.values()
        if demo or not specs.backend_of(m).demo_only(m)  # simulated models: demo data only
    ]
    return datasets, tasks, models


def participant_flow_row(data: DataDir, specs: Specs, task) -> dict:
    """``{"participant_flow": ...}`` for a family that reports one and whose instances are built, else {}
    (absent, so the catalog of a task without one keeps its content hash)."""
    from pipelines.engine.inputs import task_instances_path

    family = specs.family_of(task)
    try:
        flow = family.participant_flow(task, task_instances_path(data, task, family))
    except NotMaterialized:
        return {}
    return {"participant_flow": flow} if flow is not None else {}


def orphan_models(specs: Specs, results: list[ResultRecord]) -> list[dict]:
    """Model rows for finished results whose model spec was removed from ``specs/models/``.

    Why: a published result is never withdrawn by deleting a spec file (rule one: nobody should
    pay for it twice), and a result row must keep its model row. The row is rebuilt from the
    result record (which carries the model's identity) and says so in its description. To
    withdraw a result on purpose, ``medbench withdraw RUN_ID --reason TEXT`` (``warehouse.withdrawals``).
    """
    rows: dict[str, dict] = {}
    for r in results:
        m = r.model
        if m.slug in specs.models or m.slug in rows:
            continue
        rows[m.slug] = {"slug": m.slug, "name": m.name, "type": m.type, "provider": m.provider,
                        "provider_model_id": m.provider_model_id, "revision": m.revision,
                        "release_date": m.release_date, "knowledge_cutoff": m.knowledge_cutoff,
                        "backend": str(r.config.get("backend", "unknown")) if isinstance(r.config, dict) else "unknown",
                        "description": (f"submitted by {r.provenance.submitted_by} (submission "
                                        f"{r.provenance.submission_id or 'none'}); row kept from its published result(s)"
                                        if r.provenance.submitted_by else
                                        "model spec removed; row kept from its published result(s)"),
                        "spec_hash": r.versions.model_spec_hash, "spec": {}}
    return list(rows.values())


def published_spec(model, backend) -> dict:
    """The model spec as hashed, its settings through the same redaction as ``config.backend_settings``
    (its backend's ``published``): only declared-public settings as they are, defaults omitted."""
    return {**spec_builtins(model), "settings": backend.published(model.settings, keep_defaults=False)}
