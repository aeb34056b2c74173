"""A board of many tasks and results, seeded in bulk, that ``release()`` publishes on (bench/publish_scale).

Publishing 100,000 results one ``release()`` at a time would take days, and is not what is measured:
the bench measures one more publish on a board that exists. So the board is seeded directly, the way
the issue allows (docs/benchmarks.md, "Publishing at scale"):

- a specs directory of ``tasks`` score tasks (copies of ``vitaldb-ioh@0``'s spec under other slugs,
  each compared with ``medbench/neg-last-map``; bootstrap replicates lowered to ``REPLICATES`` so a
  block's re-ranking stays seconds), in a scratch folder;
- ``per_task`` finished runs per task (one by the baseline model, the others by models without a
  spec, published as orphan rows), each a result.json and a 50-row predictions file, with the same
  labels within a task so that ranks and baseline comparisons align;
- the first version built by ``warehouse.publish`` from a whole catalog, with each result signed in
  memory, each task's rank rows as point ranks and its baseline comparisons as plausible rows (the
  block and comparison keys are real, so ``release()`` reuses them as it reuses computed ones);
- the transparency log holding every result and the release, signed with the publisher's key.

What is then measured (one new result on one task) runs through the real ``release()``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import random
import shutil
from pathlib import Path

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from medbench.layout import DataDir
from medbench.records import MetricValue, ModelRef, ResultRecord, UsageRecord, Versions

UTC = dt.UTC
REPLICATES = 200
ROWS = 50
BASELINE = "medbench/neg-last-map"
CHECKOUT = Path(__file__).resolve().parents[1]


def task_ref(t: int) -> str:
    return f"ioh-{t:03d}@0"


def write_specs(root: Path, tasks: int) -> Path:
    """A specs directory: the vitaldb dataset, ``tasks`` copies of vitaldb-ioh@0, the baseline model."""
    specs = root / "specs"
    (specs / "datasets").mkdir(parents=True, exist_ok=True)
    shutil.copy(CHECKOUT / "specs" / "datasets" / "vitaldb.toml", specs / "datasets" / "vitaldb.toml")
    (specs / "models" / "medbench").mkdir(parents=True, exist_ok=True)
    for name in ("prices.toml", "submissions.toml"):
        shutil.copy(CHECKOUT / "specs" / name, specs / name)
    refs = ", ".join(f'"{task_ref(t)}"' for t in range(tasks))
    model = (CHECKOUT / "specs" / "models" / "medbench" / "neg-last-map.toml").read_text()
    (specs / "models" / "medbench" / "neg-last-map.toml").write_text(
        model.replace('tasks = ["vitaldb-ioh@0"]', f"tasks = [{refs}]"))
    template = (CHECKOUT / "specs" / "tasks" / "vitaldb-ioh" / "0.toml").read_text()
    for t in range(tasks):
        slug = task_ref(t).split("@")[0]
        body = template.replace('slug = "vitaldb-ioh"', f'slug = "{slug}"').replace(
            "replicates = 1000", f"replicates = {REPLICATES}")
        (specs / "tasks" / slug).mkdir(parents=True, exist_ok=True)
        (specs / "tasks" / slug / "0.toml").write_text(body)
    return specs


def _model(i: int) -> ModelRef:
    return ModelRef(slug=f"bench/model-{i:05d}", name=f"Model {i}", type=("llm", "ml", "rule")[i % 3],
                    provider="bench", provider_model_id=f"model-{i:05d}", revision="1",
                    release_date=dt.date(2025, 1, 1), knowledge_cutoff=None)


BASELINE_REF = ModelRef(slug=BASELINE, name="MAP alone", type="rule", provider="medbench",
                        provider_model_id="neg-last-map", revision="1")


def write_run(data: DataDir, task: str, model: ModelRef, labels: list[int], created: dt.datetime,
              rng: random.Random) -> ResultRecord:
    """One finished run: its predictions file and result.json (as the pipeline writes them)."""
    run_id = hashlib.sha256(f"{model.slug}|{task}|{created.isoformat()}".encode()).hexdigest()[:12]
    path = data.predictions_path(run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = len(labels)
    pq.write_table(pa.table({
        "instance_id": [f"{1 + i // 5}:{600 + 30 * (i % 5)}" for i in range(n)],
        "score": [rng.uniform(-120, -40) for _ in range(n)], "label": labels,
        "caseid": [1 + i // 5 for i in range(n)], "subjectid": [100 + i // 5 for i in range(n)],
        "t": [600 + 30 * (i % 5) for i in range(n)]}), path)
    value = rng.uniform(0.6, 0.95)
    record = ResultRecord(
        run_id=run_id, task=task, dataset="vitaldb", model=model, tier="baseline", demo=False,
        metrics=[MetricValue("auroc", value, value - 0.01, value + 0.01),
                 MetricValue("auprc", value / 2, value / 2 - 0.02, value / 2 + 0.02),
                 MetricValue("prevalence", 0.3, 0.3, 0.3)],
        n=n, parse_rate=None, cost_usd=0.0, eval_date=created.date(), created_at=created, contamination=None,
        config={"bootstrap": {"replicates": REPLICATES, "seed": 20261029}},
        versions=Versions(task_spec_hash="d" * 64, model_spec_hash="e" * 64, dataset_snapshot="a" * 16, parser=None,
                          code_revision="bench", libraries={"numpy": "2"}),
        usage=UsageRecord(prompt_tokens=None, completion_tokens=None, wall_seconds=1.0, hardware="cpu"),
        price_table_date=dt.date(2026, 10, 1), predictions_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        extras={})
    (data.artifacts / run_id / "result.json").write_bytes(msgspec.json.encode(record))
    return record


def task_labels(t: int) -> list[int]:
    rng = random.Random(t)
    return [int(rng.random() < 0.3) for _ in range(ROWS)]


def _seed_ranks(results: list[ResultRecord], tasks: list[dict]) -> list:
    """Each block's rows as point ranks under its real key (task, model type, metric, run ids)."""
    from pipelines.engine.ranking import (
        _point_rows,
        block_metrics,
        leaderboard_blocks,
        metric_order,
        results_key,
    )

    rows = []
    for (task, model_type), members in leaderboard_blocks(results, tasks).items():
        key = results_key([r.run_id for r in members])
        for metric in block_metrics(members):
            rows.extend(_point_rows(task, model_type, metric, metric_order(members, metric), key))
    return rows


def _seed_baselines(results: list[ResultRecord]) -> list[dict]:
    base = {r.task: r for r in results if r.model.slug == BASELINE}
    return [{"run_id": r.run_id, "baseline_run_id": base[r.task].run_id, "baseline_model": BASELINE,
             "metric": "auroc", "difference": r.primary.value - base[r.task].primary.value, "ci_low": -0.1,
             "ci_high": 0.1, "p_value": 0.5, "method": "seeded by bench/publish_scale", "replicates": REPLICATES,
             "seed": 20261029, "dropped_replicates": 0, "p_at_floor": False}
            for r in results if r.model.slug != BASELINE]


def seed(root: Path, tasks: int, per_task: int, key_path: Path) -> tuple[DataDir, object]:
    """The seeded board under ``root`` (see the module docstring); returns (data, specs). The signing
    key at ``key_path`` is the publisher's (``MEDBENCH_SIGNING_KEY`` must name it)."""
    from medbench.registry import installed_plugins
    from pipelines.engine.identity import code_revision
    from pipelines.engine.catalog_rows import orphan_models, spec_rows
    from pipelines.engine.specs import load_specs
    from medbench.kinds import kinds
    from warehouse.keys import load_key, record_key
    from warehouse.publish import Catalog, publish
    from warehouse.signing import utc_stamp
    from warehouse.tlog.publishing import LogPublication

    specs = load_specs(write_specs(root, tasks), installed_plugins())
    data = DataDir(root / "data")
    data.artifacts.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20261207)
    start = dt.datetime(2026, 10, 1, tzinfo=UTC)
    results = []
    for t in range(tasks):
        labels = task_labels(t)
        results.append(write_run(data, task_ref(t), BASELINE_REF, labels, start, rng))
        results += [write_run(data, task_ref(t), _model(i), labels, start + dt.timedelta(minutes=i + 1), rng)
                    for i in range(per_task - 1)]
    key = load_key(key_path)
    record_key(data, key)
    stamp = dt.datetime(2026, 11, 1, 12, tzinfo=UTC)
    datasets, task_rows, models = spec_rows(specs, data)
    catalog = Catalog(
        datasets=datasets, tasks=task_rows, models=models + orphan_models(specs, results), results=results, demo=False,
        code_revision=code_revision(), signatures={r.run_id: key.sign_result(r, stamp) for r in results},
        baseline_comparisons=_seed_baselines(results),
        prediction_schemas=[specs.family_of(t).predictions_schema for t in specs.tasks.values()],
        kind_columns={name: dict(k.sql_types) for name, k in kinds().items()},
        kind_unnest={name: tuple(getattr(k, "sql_unnest", ())) for name, k in kinds().items()})
    catalog.ranks = _seed_ranks(results, task_rows)
    publish(data, catalog, now=stamp, sign=lambda message: key.sign(message, utc_stamp(stamp)))
    LogPublication(data, key, lambda _line: None).record(results, {})
    return data, specs


def add_run(data: DataDir, t: int, i: int) -> ResultRecord:
    """One more finished run on task ``t`` by a model new to the board (what a measured publish adds)."""
    return write_run(data, task_ref(t), _model(10**5 - 1 - i), task_labels(t),
                     dt.datetime(2026, 12, 1, tzinfo=UTC) + dt.timedelta(minutes=i), random.Random(i))


def new_key(folder: Path) -> Path:
    """A publisher's key outside the data directory (``MEDBENCH_SIGNING_KEY``)."""
    from warehouse.keys import write_new_key

    path = folder / "publisher.pem"
    write_new_key(path)
    os.chmod(path, 0o600)
    return path
