"""Rule one before launching: what each selected partition needs, decided without a Dagster run.

Why: asking Dagster to run a partition only to learn that its result exists cost ~0.6 s per
partition; computing the run id from the specs and the current snapshots costs milliseconds. Every
partition is classified ``run`` (needs work), ``reuse`` (its result.json exists) or ``skip`` (not
runnable here), with the pool it would occupy and an estimated cost from ``specs/prices.toml``:

* ``tokens`` basis (API models): items x (PROMPT_TOKENS_PER_ITEM x prompt price + max_new_tokens x
  completion price) / 1e6, an upper bound since replies usually stop before the cap;
* ``device_hours`` basis (self-hosted): items x max_new_tokens / DECODE_TOKENS_PER_S device-seconds
  x the hourly rate / 3600 (expected hours, batched decoding), per GPU the engine holds;
* ``free``: 0. Items: rows of the instances file when built, else the task's ``n_items``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.engine.specs import ModelSpec, Specs, TaskSpec

PROMPT_TOKENS_PER_ITEM = 600
DECODE_TOKENS_PER_S = {"gpu": 2000.0, "cpu": 40.0}


class MaterializeError(RuntimeError):
    """A selection or setup problem; the message says what to change."""


@dataclass
class Planned:
    partition: str
    task: TaskSpec
    model: ModelSpec
    status: str  # run | reuse | skip | withdrawn (never recomputed: rule one)
    run_id: str = ""
    pool: str = "cpu"
    reason: str = ""
    items: int | None = None
    cost_usd: float | None = 0.0  # None: no price known for the model


def items_of(task: TaskSpec, instances_path, family) -> int | None:
    """The instance count: the built instances file's rows, else the spec's ``n_items``."""
    if instances_path is not None and instances_path.exists():
        import pyarrow.parquet as pq

        return pq.ParquetFile(instances_path).metadata.num_rows
    return family.planned_items(task)


def estimate_usd(specs: Specs, task: TaskSpec, model: ModelSpec, items: int | None, pool: str) -> float | None:
    """The formula in the module docstring; None when the price table has no price for the model."""
    basis = model.price.basis
    if basis == "free":
        return 0.0
    if items is None:
        return None
    cap = specs.family_of(task).token_cap(task)
    backend = specs.backend_of(model)
    new_tokens = backend.max_new_tokens(model, cap) if cap is not None else 1
    prices = specs.prices
    if basis == "tokens":
        table = prices.tokens.get(model.price.key)
        if table is None:
            return None
        return items * (PROMPT_TOKENS_PER_ITEM * table.get("prompt", 0.0)
                        + new_tokens * table.get("completion", 0.0)) / 1e6
    rate = prices.device_hours.get(model.price.key)
    if rate is None:
        return None
    devices = backend.devices(model)
    seconds = items * new_tokens / DECODE_TOKENS_PER_S.get(pool, DECODE_TOKENS_PER_S["cpu"])
    return seconds * devices * rate / 3600.0


class _AsClaimed:
    """A data directory not claimed yet, seen as what the run that follows will claim it as (a dry
    run writes nothing, yet must plan what ``materialize --demo`` does: the simulated models run)."""

    def __init__(self, data, demo_or_real: str):
        self._data, self._demo_or_real = data, demo_or_real

    def demo_or_real(self) -> str | None:
        return self._data.demo_or_real() or self._demo_or_real

    def __getattr__(self, name: str):
        return getattr(self._data, name)


def plan_selection(specs: Specs, data, pairs: list[tuple[TaskSpec, ModelSpec]], force: bool,
                   demo: bool | None = None) -> list[Planned]:
    """Each pair classified; a pair whose dataset has no current snapshot yet is ``run`` without a run id.

    ``demo``: the kind the run claims a new directory as (``--demo``), so that the dry run's plan is the
    run's plan; None where the directory is claimed already."""
    if demo is not None and data.demo_or_real() is None:
        data = _AsClaimed(data, "demo" if demo else "real")
    from pipelines.engine.evaluate import existing_result, partition_key, resolve_evaluation
    from pipelines.engine.inputs import task_instances_path
    from pipelines.engine.snapshots import NotMaterialized

    from warehouse.withdrawals import withdrawals

    out: list[Planned] = []
    items_cache: dict[str, int | None] = {}
    withdrawn = withdrawals(data)  # rule one: a withdrawn run id is never recomputed, not even with --force
    for task, model in pairs:
        backend, family = specs.backend_of(model), specs.family_of(task)
        key, pool = partition_key(task.ref, model.slug), backend.pool(model)
        try:
            run_id = resolve_evaluation(specs, data, task.ref, model.slug).run_id
            instances = task_instances_path(data, task, family)
        except NotMaterialized:
            run_id, instances = "", None
        done = bool(run_id) and existing_result(data, run_id) is not None
        reason = backend.not_runnable_reason(model, data)
        if run_id in withdrawn:
            w = withdrawn[run_id]
            status, reason = "withdrawn", (f"withdrawn on {w.date}: {w.reason} (not recomputed under the same id; "
                                           "a changed spec or revision evaluates it again)")
        elif done and not force:
            status = "reuse"
        else:
            status = "skip" if reason else "run"
        items, cost = None, 0.0
        if status == "run":
            if task.ref not in items_cache:
                items_cache[task.ref] = items_of(task, instances, family)
            items = items_cache[task.ref]
            cost = estimate_usd(specs, task, model, items, pool)
        out.append(Planned(key, task, model, status, run_id, pool, reason or "", items, cost))
    return out


def total_cost(planned: list[Planned]) -> float:
    return sum(p.cost_usd or 0.0 for p in planned if p.status == "run")


def render_plan(planned: list[Planned]) -> str:
    """The ``--dry-run`` table: what would run, be reused or be skipped, and at what estimated cost."""
    lines = [f"{'evaluation':48} {'would':6} {'pool':4} {'run_id':12} {'items':>6} {'est. USD':>10}  detail"]
    for p in planned:
        cost = "?" if p.cost_usd is None else f"{p.cost_usd:.4f}"
        items = "?" if p.items is None else str(p.items)
        lines.append(f"{p.partition:48} {p.status:6} {p.pool:4} {p.run_id or '(new)':12} {items:>6} {cost:>10}  "
                     f"{p.reason}")
    counts = {s: sum(p.status == s for p in planned) for s in ("run", "reuse", "skip", "withdrawn")}
    unknown = sum(p.status == "run" and p.cost_usd is None for p in planned)
    withdrawn = f", leave {counts['withdrawn']} withdrawn" if counts["withdrawn"] else ""
    lines.append(f"would run {counts['run']}, reuse {counts['reuse']}, skip {counts['skip']}{withdrawn}; "
                 f"estimated cost {total_cost(planned):.4f} USD" + (f" (+{unknown} without a price)" if unknown else ""))
    return "\n".join(lines)


def select(specs: Specs, tasks: list[str], models: list[str]) -> list[tuple[TaskSpec, ModelSpec]]:
    try:
        task_refs = {specs.task(t).ref for t in tasks}
        model_slugs = {specs.model(m).slug for m in models}
    except KeyError as exc:
        raise MaterializeError(exc.args[0]) from None
    pairs = [(t, m) for t, m in specs.evaluations()
             if (not task_refs or t.ref in task_refs) and (not model_slugs or m.slug in model_slugs)]
    if not pairs:
        raise MaterializeError(
            f"no evaluation matches tasks={tasks or 'all'} models={models or 'all'}: a model is evaluated only "
            "on the tasks its spec lists (specs/models/<provider>/<name>.toml, key `tasks`)")
    return pairs
