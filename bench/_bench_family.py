"""A tiny clinicalqa-like task family for the orchestration benchmark: three-option items, ``n``
per task, answered by a seeded rule (no I/O) or by an OpenAI-compatible server (one request per
item, in turn: the I/O-bound case). Registered at runtime, as a plug-in would be, so the benchmark
measures the orchestration, not a task's cost. Its specs are written to a scratch directory.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.datasets.base import Dataset, Materialized
from pipelines.engine.specs import SpecBase
from pipelines.tasks.base import CheckOutcome, Instances, TaskFamily, TextChoice, predicted_once
from medbench.layout import DataDir

REPO = Path(__file__).resolve().parents[1]
NAME = "bench-qa"
OPTIONS = ["A", "B", "C"]
SCHEMA = pa.schema([("instance_id", pa.string()), ("prediction", pa.string()), ("label", pa.string()),
                    ("correct", pa.bool_()), ("parse_status", pa.string()), ("raw_output", pa.string())])


class BenchDataset(Dataset):
    slug = NAME

    def materialize(self, spec, data: DataDir, options: Mapping[str, Any], log) -> Materialized:
        n = int(options["n_items"])
        payload = "".join(json.dumps({"id": f"q{i:04d}", "answer": OPTIONS[i % 3]}) + "\n" for i in range(n)).encode()
        snapshot_id = hashlib.sha256(payload).hexdigest()[:16]
        folder = data.snapshots(self.slug)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{snapshot_id}.jsonl").write_bytes(payload)
        return Materialized(snapshot_id, folder / f"{snapshot_id}.jsonl", n, {"source": "generated"})


class BenchSettings(SpecBase):
    n_items: int


class BenchExtras(msgspec.Struct, frozen=True):
    correct: int


class BenchFamily(TaskFamily):
    name = NAME
    kind = "choice"
    cluster_column = None  # items are the resampling unit
    dataset = NAME
    settings_key = "bench"
    settings_type = BenchSettings
    instances_file = "items.parquet"
    predictions_schema = SCHEMA
    instance_check_names = ("row_count_matches_spec",)
    prediction_check_names = ("every_instance_predicted_once",)

    def check_settings(self, task) -> None:
        pass

    def snapshot_options(self, task) -> dict[str, Any]:
        return {"n_items": task.settings.n_items}

    def parser_version(self, task) -> str | None:
        return None

    def build_instances(self, task, snapshot: Path, out: Path, log) -> Instances:
        rows = [json.loads(line) for line in snapshot.read_text().splitlines()]
        table = pa.table({"instance_id": [r["id"] for r in rows], "label": [r["answer"] for r in rows]})
        pq.write_table(table, out)
        return Instances(out, table.num_rows)

    def instance_checks(self, task, instances: Path) -> list[CheckOutcome]:
        return [CheckOutcome("row_count_matches_spec", pq.ParquetFile(instances).metadata.num_rows == task.settings.n_items)]

    def expected_ids(self, task, instances: Path) -> set[str]:
        return set(pq.read_table(instances).column("instance_id").to_pylist())

    def problem(self, ev, instances: Path) -> TextChoice:
        """One prompt per item (the id in it), answered by the model's backend (a rule draws uniformly
        over the options; an OpenAI-compatible server is asked), read as the last ``: X``."""
        from pipelines.backends.base import PromptItem

        items = pq.read_table(instances)
        ids, labels = items.column("instance_id").to_pylist(), items.column("label").to_pylist()

        def parse(outputs: dict[str, str]) -> pa.Table:
            raw = [outputs[i] for i in ids]
            answers = [next((o for o in OPTIONS if f": {o}" in text), "A") for text in raw]
            return pa.table({"instance_id": ids, "prediction": answers, "label": labels,
                             "correct": [a == b for a, b in zip(answers, labels)], "parse_status": ["ok"] * len(ids),
                             "raw_output": raw}, schema=SCHEMA)

        return TextChoice(prompts=[PromptItem(i, f"[id={i}] ?") for i in ids], prompt_hash=NAME, max_new_tokens=16,
                          temperature=0.0, options=OPTIONS, parse=parse)

    def score(self, task, predictions: pa.Table, instances: Path):
        from medbench.outcomes import ScoreSummary
        from medbench.stats.bootstrap import percentile_bootstrap_mean

        correct = np.asarray(predictions.column("correct").to_pylist(), dtype=bool)
        acc = tuple(percentile_bootstrap_mean(correct, task.bootstrap.replicates, task.bootstrap.seed))
        return ScoreSummary(metrics=[("accuracy", *acc), ("parse_rate", 1.0, 1.0, 1.0)], n=len(correct),
                            parse_rate=1.0, extras=BenchExtras(correct=int(correct.sum())))

    def prediction_checks(self, task, predictions: pa.Table, expected: set[str]) -> list[CheckOutcome]:
        return [predicted_once(predictions, expected)]


def register():
    """Run the Dagster layer in this process with the installed plug-ins plus this family and dataset
    (``pipelines.orchestration.plugins.using``), as a separately installed plug-in would be seen."""
    from medbench.registry import installed_plugins
    from pipelines.orchestration.plugins import using

    plugins = installed_plugins()
    plugins.families.add(BenchFamily())
    plugins.datasets.add(BenchDataset())
    return using(plugins)


DATASET = f'''slug = "{NAME}"
name = "Benchmark QA"
license = "CC0"
license_url = "https://creativecommons.org/publicdomain/zero/1.0/"
citation = "medbench benchmark."
doi = "10.0000/bench"
public_since = 2020-01-01
description = "Generated three-option items."

[source]
kind = "generated"
location = "bench/_bench_family.py"
split = ""
revision = "1"
'''

TASK = f'''slug = "{NAME}"
version = 0
family = "{NAME}"
dataset = "{NAME}"
kind = "choice"
title = "Benchmark QA"
description = "Generated items for the orchestration benchmark."
primary_metric = "accuracy"
preview = true
metrics = ["accuracy", "parse_rate"]

[bootstrap]
replicates = 200
seed = 7
unit = "item"

[bench]
n_items = {{n_items}}
'''

MODEL = f'''slug = "bench/{{name}}"
name = "{{name}}"
type = "{{type}}"
provider = "bench"
provider_model_id = "{{name}}"
revision = "1"
description = "Benchmark model."
backend = "{{backend}}"
tasks = ["{NAME}@0"]

[settings]
{{settings}}

[price]
basis = "free"
'''


def write_specs(root: Path, n_items: int, n_models: int, base_url: str | None = None) -> Path:
    """Scratch specs: the dataset, the task, and ``n_models`` rule models (or API models at ``base_url``)."""
    (root / "datasets").mkdir(parents=True)
    (root / "tasks" / NAME).mkdir(parents=True)
    (root / "models" / "bench").mkdir(parents=True)
    (root / "datasets" / f"{NAME}.toml").write_text(DATASET)
    (root / "tasks" / NAME / "0.toml").write_text(TASK.format(n_items=n_items))
    (root / "prices.toml").write_bytes((REPO / "specs" / "prices.toml").read_bytes())
    for i in range(n_models):
        if base_url:
            text = MODEL.format(name=f"api-{i:04d}", type="llm", backend="openai", settings=f'base_url = "{base_url}"')
        else:
            text = MODEL.format(name=f"rule-{i:04d}", type="rule", backend="rule",
                                settings=f'rule = "uniform_choice"\nseed = {i}')
        (root / "models" / "bench" / f"{'api' if base_url else 'rule'}-{i:04d}.toml").write_text(text)
    return root
