"""A parser change re-scores stored raw outputs: a new result, the old one superseded, no model call."""

import msgspec
import pytest

from pipelines.engine import evaluate as runs, inputs
from pipelines.engine.generations import GenerationStore
from pipelines.engine.identity import run_id
from pipelines.engine.release import release
from support.plugins import specs as load_specs
from pipelines.tasks.clinicalqa.parsing.tokens import ParseResult
from pipelines.tasks.clinicalqa.parsing.v1 import parse_answer_v1 as parse_answer
from pipelines.tasks.clinicalqa.parsing.versions import PARSERS
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
                             run_id(first.model, task2, first.snapshot_id), first.family, first.backend)
    assert second.run_id != first.run_id
    appended.clear()
    runs.make_predictions(second, data, lambda _: None)
    new = runs.compute_metrics(second, specs, data, lambda _: None)
    assert sum(appended) == 0  # no model call: the stored outputs were re-scored
    assert new.generation_key == old.generation_key
    assert new.versions.parser == "v1-strict" and old.versions.parser == first.task.choice.parser

    release(specs, data, lambda _: None)
    snap = open_current(data)
    rows = dict(snap.con.execute("SELECT run_id, superseded_by FROM results").fetchall())
    snap.close()
    assert rows == {old.run_id: new.run_id, new.run_id: None}


OLD_CLINICALQA_SPEC_CHANGES = (('parser = "v2"', 'parser = "v1"'), ('[intervals]\nproportion = "wilson"\n', ''))


def _specs_with_old_clinicalqa(root):
    """A copy of specs/ whose clinicalqa@0 is the spec before parser v2 and Wilson intervals."""
    import shutil

    from pipelines.engine.specs import DEFAULT_SPECS_DIR

    shutil.copytree(DEFAULT_SPECS_DIR, root)
    path = root / "tasks" / "clinicalqa" / "0.toml"
    text = path.read_text()
    for new, old in OLD_CLINICALQA_SPEC_CHANGES:
        assert new in text
        text = text.replace(new, old)
    path.write_text(text)
    return load_specs(root)


def test_publishing_parser_v2_rescores_and_supersedes_v1_end_to_end(tmp_path, monkeypatch):
    """The real spec change (parser v1 -> v2, bootstrap -> Wilson): new run id, no model call, v1
    superseded by v2 and still served at /v1/results/{old}."""
    from litestar.testing import TestClient

    from api.app import create_app

    data = DataDir(tmp_path / "data")
    data.claim("demo")
    old_specs = _specs_with_old_clinicalqa(tmp_path / "old-specs")
    new_specs = load_specs()
    appended: list[int] = []
    original_append = GenerationStore.append

    def counting_append(self, generations):
        generations = list(generations)
        appended.append(len(generations))
        return original_append(self, generations)

    monkeypatch.setattr(GenerationStore, "append", counting_append)
    inputs.materialise_snapshot(old_specs, data, "clinicalqa", lambda _: None)
    inputs.materialise_instances(old_specs, data, "clinicalqa@0", lambda _: None)
    first = runs.plan(old_specs, data, "clinicalqa@0", "medbench/random")
    runs.make_predictions(first, data, lambda _: None)
    old = runs.compute_metrics(first, old_specs, data, lambda _: None)
    release(old_specs, data, lambda _: None)
    assert sum(appended) == 1045 and old.versions.parser == "v1"
    assert old.metrics[0].method == "bootstrap-percentile"

    appended.clear()
    inputs.materialise_instances(new_specs, data, "clinicalqa@0", lambda _: None)
    second = runs.plan(new_specs, data, "clinicalqa@0", "medbench/random")
    assert second.run_id != first.run_id
    runs.make_predictions(second, data, lambda _: None)
    new = runs.compute_metrics(second, new_specs, data, lambda _: None)
    release(new_specs, data, lambda _: None)
    assert sum(appended) == 0  # no model call: the stored raw outputs were re-scored by v2
    assert new.generation_key == old.generation_key
    assert new.versions.parser == "v2" and {m.method for m in new.metrics} == {"wilson"}

    snap = open_current(data)
    rows = dict(snap.con.execute("SELECT run_id, superseded_by FROM results").fetchall())
    snap.close()
    assert rows == {old.run_id: new.run_id, new.run_id: None}
    with TestClient(create_app(data.root)) as client:
        body = client.get(f"/v1/results/{old.run_id}").json()
        assert body["superseded_by"] == new.run_id and body["versions"]["parser"] == "v1"
        assert body["metric"]["value"] == old.metrics[0].value
        fresh = client.get(f"/v1/results/{new.run_id}").json()
        assert fresh["superseded_by"] is None and fresh["metric"]["method"] == "wilson"
