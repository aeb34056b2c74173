"""A parser change re-scores stored raw outputs: a new result, the old one superseded, no model call."""

import msgspec
import pytest

from pipelines.engine import evaluate as runs, inputs
from pipelines.engine.generations import GenerationStore
from pipelines.engine.identity import run_id
from pipelines.tasks.clinicalqa.parser import PARSERS, ParseResult, parse_answer
from pipelines.engine.release import release
from pipelines.engine.specs import load_specs
from warehouse.layout import DataDir
from warehouse.read import open_current


def strict_v1(text, options):
    """A stricter parser for the test: only answers written as `정답: X` count."""
    result = parse_answer(text, options)
    return result if text and "정답" in text else ParseResult(None, "no_answer")


@pytest.fixture()
def clinicalqa_data(tmp_path):
    data = DataDir(tmp_path)
    data.claim("demo")
    specs = load_specs()
    inputs.materialise_snapshot(specs, data, "clinicalqa", lambda _: None)
    inputs.materialise_instances(specs, data, "clinicalqa@0", lambda _: None)
    return specs, data


def test_parser_change_rescores_without_calling_the_model(clinicalqa_data, monkeypatch):
    specs, data = clinicalqa_data
    appended: list[int] = []
    original_append = GenerationStore.append

    def counting_append(self, generations):
        generations = list(generations)
        appended.append(len(generations))
        return original_append(self, generations)

    monkeypatch.setattr(GenerationStore, "append", counting_append)
    first = runs.plan(specs, data, "clinicalqa@0", "medbench/random")
    runs.make_predictions(first, data, lambda _: None)
    old = runs.compute_metrics(first, specs, data, lambda _: None)
    assert sum(appended) == 1045  # the model answered every item once

    monkeypatch.setitem(PARSERS, "v1-strict", strict_v1)
    task2 = msgspec.structs.replace(first.task, choice=msgspec.structs.replace(first.task.choice, parser="v1-strict"))
    second = runs.Evaluation(task2, first.model, first.dataset, first.snapshot_id,
                             run_id(first.model, task2, first.snapshot_id))
    assert second.run_id != first.run_id
    appended.clear()
    runs.make_predictions(second, data, lambda _: None)
    new = runs.compute_metrics(second, specs, data, lambda _: None)
    assert sum(appended) == 0  # no model call: the stored outputs were re-scored
    assert new.generation_key == old.generation_key
    assert new.versions.parser == "v1-strict" and old.versions.parser == "v1"

    release(specs, data, lambda _: None)
    snap = open_current(data)
    rows = dict(snap.con.execute("SELECT run_id, superseded_by FROM results").fetchall())
    snap.close()
    assert rows == {old.run_id: new.run_id, new.run_id: None}
