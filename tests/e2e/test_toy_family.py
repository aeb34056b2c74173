"""Proof that the engine, the Dagster assets, the warehouse, ``/v1`` and the site hold no task names:
a toy task family defined entirely here (its own tiny generated dataset, dataset spec, task spec and
a rule model spec, in a scratch ``MEDBENCH_SPECS`` directory and a scratch data directory) is
registered at runtime, materialized through the same assets as the real tasks (the path
``medbench materialize`` takes), and then served like them.

The toy task: three-option sums ("2 + 3 = ?"), kind ``choice``; the rule model answers each item
with a seeded uniform draw (``pipelines.backends.rule.uniform_choice``), so its accuracy is near 1/3.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Mapping

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from litestar.testing import TestClient

from medbench.registry import Plugins
from pipelines.datasets.base import Dataset, Materialized
from pipelines.engine.specs import SpecBase
from pipelines.tasks.base import CheckOutcome, Instances, TaskFamily, TextChoice, predicted_once
from support.plugins import specs, with_plugins
from medbench.layout import DataDir
from support.paths import REPO

N_ITEMS = 24
OPTIONS = ["A", "B", "C"]
PREDICTIONS_SCHEMA = pa.schema([
    ("instance_id", pa.string()), ("prediction", pa.string()), ("label", pa.string()),
    ("correct", pa.bool_()), ("parse_status", pa.string()), ("raw_output", pa.string()),
])


# --------------------------------------------------------------------------- the toy dataset


def toy_rows(n: int) -> list[dict[str, Any]]:
    """Sums with three options, the right one at a position that cycles A, B, C."""
    rows = []
    for i in range(n):
        a, b = i % 7 + 1, i % 5 + 2
        right = a + b
        choices = [right + 1, right + 2]
        choices.insert(i % 3, right)
        rows.append({"id": f"q{i:03d}", "question": f"{a} + {b} = ?", "choices": choices, "answer": OPTIONS[i % 3]})
    return rows


class ToyDataset(Dataset):
    slug = "toy-sums"

    def materialize(self, spec, data: DataDir, options: Mapping[str, Any], log) -> Materialized:
        payload = "".join(json.dumps(r) + "\n" for r in toy_rows(int(options["n_items"]))).encode()
        snapshot_id = hashlib.sha256(payload).hexdigest()[:16]
        folder = data.snapshots(self.slug)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{snapshot_id}.jsonl"
        path.write_bytes(payload)
        log(f"toy-sums: snapshot {snapshot_id}")
        return Materialized(snapshot_id, path, int(options["n_items"]), {"source": "generated"})


# --------------------------------------------------------------------------- the toy family


class ToySettings(SpecBase):
    n_items: int
    options: list[str]


class ToyExtras(msgspec.Struct, frozen=True):
    correct: int
    options: int


class ToySums(TaskFamily):
    name = "toy-sums"
    kind = "choice"
    cluster_column = None  # independent items: no cluster to resample
    dataset = "toy-sums"
    settings_key = "toy"
    settings_type = ToySettings
    instances_file = "items.parquet"
    predictions_schema = PREDICTIONS_SCHEMA
    instance_check_names = ("row_count_matches_spec",)
    prediction_check_names = ("every_instance_predicted_once",)

    def check_settings(self, task) -> None:
        if task.settings.n_items <= 0:
            raise ValueError("n_items must be positive")

    def snapshot_options(self, task) -> dict[str, Any]:
        return {"n_items": task.settings.n_items}

    def parser_version(self, task) -> str | None:
        return None

    def build_instances(self, task, snapshot: Path, out: Path, log) -> Instances:
        rows = [json.loads(line) for line in snapshot.read_text().splitlines()]
        table = pa.table({"instance_id": [r["id"] for r in rows], "label": [r["answer"] for r in rows],
                          "question": [r["question"] for r in rows]})
        pq.write_table(table, out)
        return Instances(out, table.num_rows)

    def instance_checks(self, task, instances: Path) -> list[CheckOutcome]:
        rows = pq.ParquetFile(instances).metadata.num_rows
        return [CheckOutcome("row_count_matches_spec", rows == task.settings.n_items)]

    def expected_ids(self, task, instances: Path) -> set[str]:
        return set(pq.read_table(instances).column("instance_id").to_pylist())

    def problem(self, ev, instances: Path) -> TextChoice:
        """Each question as a prompt; the rule model's seeded uniform draw over the options is the answer."""
        from pipelines.backends.base import PromptItem

        items = pq.read_table(instances)
        ids, labels = items.column("instance_id").to_pylist(), items.column("label").to_pylist()
        prompts = [PromptItem(i, q) for i, q in zip(ids, items.column("question").to_pylist())]

        def parse(outputs: dict[str, str]) -> pa.Table:
            raw = [outputs[i] for i in ids]
            answers = [r.rpartition(":")[2].strip() for r in raw]
            return pa.table({"instance_id": ids, "prediction": answers, "label": labels,
                             "correct": [a == b for a, b in zip(answers, labels)],
                             "parse_status": ["ok" if a in ev.task.settings.options else "unparsed" for a in answers],
                             "raw_output": raw}, schema=PREDICTIONS_SCHEMA)

        return TextChoice(prompts=prompts, prompt_hash="toy-sums", max_new_tokens=8, temperature=0.0,
                          options=ev.task.settings.options, parse=parse)

    def score(self, task, predictions: pa.Table, instances: Path):
        from medbench.outcomes import ScoreSummary
        from medbench.stats.bootstrap import percentile_bootstrap_mean

        correct = np.asarray(predictions.column("correct").to_pylist(), dtype=bool)
        parsed = np.ones(len(correct), dtype=bool)
        reps, seed = task.bootstrap.replicates, task.bootstrap.seed
        accuracy = tuple(percentile_bootstrap_mean(correct, reps, seed))
        parse_rate = tuple(percentile_bootstrap_mean(parsed, reps, seed))
        return ScoreSummary(metrics=[("accuracy", *accuracy), ("parse_rate", *parse_rate)], n=len(correct),
                            parse_rate=parse_rate[0], extras=ToyExtras(correct=int(correct.sum()), options=3))

    def prediction_checks(self, task, predictions: pa.Table, expected: set[str]) -> list[CheckOutcome]:
        return [predicted_once(predictions, expected)]


# --------------------------------------------------------------------------- its specs


DATASET_TOML = '''slug = "toy-sums"
name = "Toy sums"
license = "CC0"
license_url = "https://creativecommons.org/publicdomain/zero/1.0/"
citation = "medbench test suite. Toy sums."
doi = "10.0000/toy"
public_since = 2020-01-01
description = "Generated three-option sums."

[source]
kind = "generated"
location = "tests/e2e/test_toy_family.py"
split = ""
revision = "1"
'''

TASK_TOML = f'''slug = "toy-sums"
version = 0
family = "toy-sums"
dataset = "toy-sums"
kind = "choice"
title = "Toy sums"
description = "Three-option sums, to prove that a task family needs no engine code."
primary_metric = "accuracy"
preview = true
metrics = ["accuracy", "parse_rate"]

[bootstrap]
replicates = 200
seed = 7
unit = "item"

[toy]
n_items = {N_ITEMS}
options = ["A", "B", "C"]
'''

MODEL_TOML = '''slug = "toy/coin"
name = "Three-sided coin"
type = "rule"
provider = "toy"
provider_model_id = "coin"
revision = "1"
description = "Answers uniformly at random, seeded per item."
backend = "rule"
tasks = ["toy-sums@0"]

[settings]
rule = "uniform_choice"
seed = 5

[price]
basis = "free"
'''


def write_specs(root: Path, task_toml: str = TASK_TOML) -> Path:
    (root / "datasets").mkdir(parents=True)
    (root / "tasks" / "toy-sums").mkdir(parents=True)
    (root / "models" / "toy").mkdir(parents=True)
    (root / "datasets" / "toy-sums.toml").write_text(DATASET_TOML)
    (root / "tasks" / "toy-sums" / "0.toml").write_text(task_toml)
    (root / "models" / "toy" / "coin.toml").write_text(MODEL_TOML)
    (root / "prices.toml").write_bytes((REPO / "specs" / "prices.toml").read_bytes())
    return root


@pytest.fixture
def toy_registered() -> Iterator[Plugins]:
    """The installed plug-ins plus the toy family and dataset, in a bundle of this test's own, which
    the Dagster layer runs with (``pipelines.orchestration.plugins.using``) while the test lasts."""
    from pipelines.orchestration.plugins import using

    with using(with_plugins(families=[ToySums()], datasets=[ToyDataset()])) as plugins:
        yield plugins


def load_specs(root: Path, plugins: Plugins) -> Any:
    return specs(root, plugins)


@pytest.fixture
def toy_published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toy_registered: Plugins) -> tuple[Path, str]:
    from pipelines.dagster.orchestrate import materialize_selection

    specs = write_specs(tmp_path / "specs")
    data = tmp_path / "data"
    monkeypatch.setenv("MEDBENCH_SPECS", str(specs))
    monkeypatch.setenv("MEDBENCH_DATA", str(data))
    monkeypatch.setenv("DAGSTER_HOME", str(data / "dagster"))
    report = materialize_selection(demo=True, data=DataDir(data))
    assert report.ok, report.render()
    [outcome] = report.outcomes
    assert outcome.partition == "toy-sums@0|toy/coin" and outcome.status == "ran", report.render()
    return data, outcome.run_id


# --------------------------------------------------------------------------- the proof


def test_the_loader_takes_a_family_registered_at_runtime(tmp_path: Path, toy_registered: Plugins) -> None:
    specs = load_specs(write_specs(tmp_path / "specs"), toy_registered)
    task = specs.task("toy-sums")
    assert task.family == "toy-sums" and task.ref == "toy-sums@0" and task.dataset == "toy-sums"
    assert task.settings == ToySettings(n_items=N_ITEMS, options=OPTIONS) and task.toy is task.settings
    assert msgspec.to_builtins(task)["toy"] == {"n_items": N_ITEMS, "options": OPTIONS}


def test_unknown_family_and_settings_keys_are_spec_errors(tmp_path: Path, toy_registered: Plugins) -> None:
    from pipelines.engine.specs import SpecError

    bad = write_specs(tmp_path / "a", TASK_TOML.replace('family = "toy-sums"', 'family = "toy-sum"'))
    with pytest.raises(SpecError, match=r"0\.toml: key `family`: unknown task family 'toy-sum'"):
        load_specs(bad, toy_registered)
    typo = write_specs(tmp_path / "b", TASK_TOML + "n_itmes = 3\n")
    with pytest.raises(SpecError, match=r"0\.toml: unknown key `toy\.n_itmes`"):
        load_specs(typo, toy_registered)
    kind = write_specs(tmp_path / "c", TASK_TOML.replace('kind = "choice"', 'kind = "score"'))
    with pytest.raises(SpecError, match=r"key `kind` is 'score' but family 'toy-sums' is of kind 'choice'"):
        load_specs(kind, toy_registered)


def test_a_toy_family_is_materialized_and_served_like_the_real_tasks(toy_published: tuple[Path, str]) -> None:
    from api.app import create_app

    data, run = toy_published
    record = json.loads((data / "artifacts" / run / "result.json").read_bytes())
    assert record["task"] == "toy-sums@0" and record["extras"] == {"correct": record["extras"]["correct"], "options": 3}
    predictions = pq.read_table(data / "artifacts" / run / "predictions.parquet")
    assert predictions.schema.names == PREDICTIONS_SCHEMA.names and predictions.num_rows == N_ITEMS
    with TestClient(create_app(data)) as client:
        tasks = client.get("/v1/tasks").json()["tasks"]
        assert [(t["slug"], t["kind"], t["n_results"]) for t in tasks] == [("toy-sums", "choice", 1)]
        board = client.get("/v1/leaderboard?task=toy-sums@0").json()
        assert board["task"] == "toy-sums@0" and board["metric"] == "accuracy"
        [row] = board["rows"]
        assert row["run_id"] == run and row["model"]["slug"] == "toy/coin" and row["n"] == N_ITEMS
        assert row["metric"]["value"] == pytest.approx(record["extras"]["correct"] / N_ITEMS)
        result = client.get(f"/v1/results/{run}").json()
        assert result["task"] == "toy-sums@0" and result["demo"] is True
        assert result["extras"] == record["extras"] and result["parse_rate"] == 1.0
        assert [m["name"] for m in result["metrics"]] == ["accuracy", "parse_rate"]
        lookup = client.get("/v1/lookup?model=toy/coin&task=toy-sums").json()
        assert lookup["status"] == "evaluated" and lookup["result"]["run_id"] == run
        spec = client.get("/v1/tasks/toy-sums?version=0").json()["spec"]
        assert spec["family"] == "toy-sums" and spec["toy"]["n_items"] == N_ITEMS
        page = client.get("/tasks/toy-sums?version=0")
        assert page.status_code == 200 and "Toy sums" in page.text and "toy/coin" in page.text
        assert client.get(f"/r/{run}").status_code == 200
        download = client.get(f"/artifacts/{run}/predictions.parquet")
        assert download.status_code == 200 and hashlib.sha256(download.content).hexdigest() == result["predictions_sha256"]
    assert os.environ["MEDBENCH_SPECS"].endswith("specs")
