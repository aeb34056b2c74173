"""A parser change re-scores stored raw outputs: a new result, the old one superseded, no model call."""

import msgspec
import pytest

from pipelines.engine import evaluate as runs, inputs
from pipelines.engine.generations import GenerationStore
from pipelines.engine.identity import run_id
from pipelines.engine.release import publish_results
from support.plugins import specs as load_specs
from pipelines.tasks.clinicalqa.parsing.tokens import ParseResult
from pipelines.tasks.clinicalqa.parsing.v1 import parse_answer_v1 as parse_answer
from pipelines.tasks.clinicalqa.parsing.versions import PARSERS
from medbench.layout import DataDir
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
    inputs.materialize_snapshot(specs, data, "clinicalqa", lambda _: None)
    inputs.materialize_instances(specs, data, "clinicalqa@0", lambda _: None)
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
    first = runs.resolve_evaluation(specs, data, "clinicalqa@0", "medbench/random")
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

    publish_results(specs, data, lambda _: None)
    snap = open_current(data)
    rows = dict(snap.con.execute("SELECT run_id, superseded_by FROM results").fetchall())
    snap.close()
    assert rows == {old.run_id: new.run_id, new.run_id: None}


OLD_CLINICALQA_SPEC_CHANGES = (('parser = "v4"', 'parser = "v1"'), ('[intervals]\nproportion = "wilson"\n', ''))


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
    """The real spec change (parser v1 -> v2, now v4, bootstrap -> Wilson): new run id, no model call,
    v1 superseded by the current parser's result and still served at /v1/results/{old}."""
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
    inputs.materialize_snapshot(old_specs, data, "clinicalqa", lambda _: None)
    inputs.materialize_instances(old_specs, data, "clinicalqa@0", lambda _: None)
    first = runs.resolve_evaluation(old_specs, data, "clinicalqa@0", "medbench/random")
    runs.make_predictions(first, data, lambda _: None)
    old = runs.compute_metrics(first, old_specs, data, lambda _: None)
    publish_results(old_specs, data, lambda _: None)
    assert sum(appended) == 1045 and old.versions.parser == "v1"
    assert old.metrics[0].method == "bootstrap-percentile"

    appended.clear()
    inputs.materialize_instances(new_specs, data, "clinicalqa@0", lambda _: None)
    second = runs.resolve_evaluation(new_specs, data, "clinicalqa@0", "medbench/random")
    assert second.run_id != first.run_id
    runs.make_predictions(second, data, lambda _: None)
    new = runs.compute_metrics(second, new_specs, data, lambda _: None)
    publish_results(new_specs, data, lambda _: None)
    assert sum(appended) == 0  # no model call: the stored raw outputs were re-scored by the current parser
    assert new.generation_key == old.generation_key
    assert new.versions.parser == "v4" and {m.method for m in new.metrics} == {"wilson"}

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


def _specs_with_clinicalqa_parser(root, parser):
    """A copy of specs/ whose clinicalqa@0 names another answer parser (everything else as now)."""
    import shutil

    from pipelines.engine.specs import DEFAULT_SPECS_DIR

    shutil.copytree(DEFAULT_SPECS_DIR, root)
    path = root / "tasks" / "clinicalqa" / "0.toml"
    text = path.read_text()
    assert 'parser = "v4"' in text
    path.write_text(text.replace('parser = "v4"', f'parser = "{parser}"'))
    return load_specs(root)


# Replies v2 reads as no answer and v3 reads (the audit's styles), and one neither reads.
STYLES = ('{{"answer": "{x}"}}', "Option {x} is correct.", "Therefore, {x}.", "{x}입니다.", "가장 적절한 것은 {x}이다.",
          "정답: A\n\n다시 생각해보니 정답: {x}", "I cannot tell.", "정답: {x}")


def test_publishing_parser_v3_rescores_and_supersedes_v2_from_the_stored_outputs(tmp_path, monkeypatch):
    """clinicalqa@0 moving from parser v2 to v3: new run id, no model call (the rule backend fails if
    called), predictions from the stored outputs, the v2 result superseded, and each result's
    unparsed outputs published as ``unparsed_sample``."""
    from litestar.testing import TestClient

    import pyarrow.parquet as pq

    from api.app import create_app
    from pipelines.backends import rule

    data = DataDir(tmp_path / "data")
    data.claim("demo")
    v2_specs = _specs_with_clinicalqa_parser(tmp_path / "v2-specs", "v2")
    v3_specs = _specs_with_clinicalqa_parser(tmp_path / "v3-specs", "v3")
    styled = iter(range(10**6))
    monkeypatch.setattr(rule, "uniform_choice", lambda seed, iid, options: "X")
    original_append = GenerationStore.append
    appended: list[int] = []

    def styled_append(self, generations):
        """The model's replies in the styles above (the rule backend writes "정답: X")."""
        out = []
        for g in generations:
            i = next(styled)
            letter = "ABCDE"[i % 5]
            out.append(msgspec.structs.replace(g, output=STYLES[i % len(STYLES)].format(x=letter)))
        appended.append(len(out))
        return original_append(self, out)

    monkeypatch.setattr(GenerationStore, "append", styled_append)
    inputs.materialize_snapshot(v2_specs, data, "clinicalqa", lambda _: None)
    inputs.materialize_instances(v2_specs, data, "clinicalqa@0", lambda _: None)
    first = runs.resolve_evaluation(v2_specs, data, "clinicalqa@0", "medbench/random")
    runs.make_predictions(first, data, lambda _: None)
    old = runs.compute_metrics(first, v2_specs, data, lambda _: None)
    publish_results(v2_specs, data, lambda _: None)
    assert sum(appended) == 1045 and old.versions.parser == "v2"

    def model_called(*_args):
        raise AssertionError("re-scoring called the model")

    monkeypatch.setattr(rule, "uniform_choice", model_called)
    appended.clear()
    inputs.materialize_instances(v3_specs, data, "clinicalqa@0", lambda _: None)
    second = runs.resolve_evaluation(v3_specs, data, "clinicalqa@0", "medbench/random")
    assert second.run_id != first.run_id
    runs.make_predictions(second, data, lambda _: None)
    new = runs.compute_metrics(second, v3_specs, data, lambda _: None)
    publish_results(v3_specs, data, lambda _: None)
    assert sum(appended) == 0  # no new generation: the stored raw outputs were re-scored by v3
    assert new.generation_key == old.generation_key
    assert new.versions.parser == "v3"
    stored = {g.instance_id: g.output for g in GenerationStore(data.generations(new.generation_key)).load().values()}
    predictions = pq.read_table(data.predictions_path(new.run_id)).to_pylist()
    assert {p["instance_id"]: p["raw_output"] for p in predictions} == stored
    unreadable = sum(1 for i in range(1045) if STYLES[i % len(STYLES)] == "I cannot tell.")
    v3_only = sum(1 for i in range(1045) if i % len(STYLES) < 5)  # the first five styles
    assert old.parse_rate == pytest.approx((1045 - unreadable - v3_only) / 1045)
    assert new.parse_rate == pytest.approx((1045 - unreadable) / 1045)

    snap = open_current(data)
    rows = dict(snap.con.execute("SELECT run_id, superseded_by FROM results").fetchall())
    snap.close()
    assert rows == {old.run_id: new.run_id, new.run_id: None}
    with TestClient(create_app(data.root)) as client:
        body = client.get(f"/v1/results/{old.run_id}").json()
        assert body["superseded_by"] == new.run_id and body["versions"]["parser"] == "v2"
        assert len(body["unparsed_sample"]) == 20 and "unparsed_sample" not in body["extras"]
        assert {u["output"] for u in body["unparsed_sample"]} <= {s.format(x=x) for s in STYLES for x in "ABCDE"}
        fresh = client.get(f"/v1/results/{new.run_id}").json()
        assert fresh["superseded_by"] is None and fresh["versions"]["parser"] == "v3"
        assert [u["output"] for u in fresh["unparsed_sample"]] == ["I cannot tell."] * 20
        page = client.get(f"/r/{new.run_id}").text
        assert 'id="unparsed-sample"' in page and "I cannot tell." in page


# Replies v3 reads as no answer and v4 reads (the held-out sets' styles), and one neither reads.
V4_STYLES = ("答案是{x}。", "正解は{x}です。", "The most likely diagnosis is {x}.", "{x}가 가장 적절합니다.", "【정답】 {x}",
             "I cannot tell.", "정답: {x}")


def test_publishing_parser_v4_rescores_and_supersedes_v3_from_the_stored_outputs(tmp_path, monkeypatch):
    """clinicalqa@0 moving from parser v3 to v4: new run id, no model call (the rule backend fails if
    called), predictions from the stored outputs, the v3 result superseded by the v4 one."""
    from pipelines.backends import rule

    data = DataDir(tmp_path / "data")
    data.claim("demo")
    v3_specs = _specs_with_clinicalqa_parser(tmp_path / "v3-specs", "v3")
    v4_specs = load_specs()
    assert v4_specs.task("clinicalqa@0").settings.parser == "v4"
    styled = iter(range(10**6))
    monkeypatch.setattr(rule, "uniform_choice", lambda seed, iid, options: "X")
    original_append = GenerationStore.append
    appended: list[int] = []

    def styled_append(self, generations):
        out = []
        for g in generations:
            i = next(styled)
            out.append(msgspec.structs.replace(g, output=V4_STYLES[i % len(V4_STYLES)].format(x="ABCDE"[i % 5])))
        appended.append(len(out))
        return original_append(self, out)

    monkeypatch.setattr(GenerationStore, "append", styled_append)
    inputs.materialize_snapshot(v3_specs, data, "clinicalqa", lambda _: None)
    inputs.materialize_instances(v3_specs, data, "clinicalqa@0", lambda _: None)
    first = runs.resolve_evaluation(v3_specs, data, "clinicalqa@0", "medbench/random")
    runs.make_predictions(first, data, lambda _: None)
    old = runs.compute_metrics(first, v3_specs, data, lambda _: None)
    publish_results(v3_specs, data, lambda _: None)
    assert sum(appended) == 1045 and old.versions.parser == "v3"

    def model_called(*_args):
        raise AssertionError("re-scoring called the model")

    monkeypatch.setattr(rule, "uniform_choice", model_called)
    appended.clear()
    inputs.materialize_instances(v4_specs, data, "clinicalqa@0", lambda _: None)
    second = runs.resolve_evaluation(v4_specs, data, "clinicalqa@0", "medbench/random")
    assert second.run_id != first.run_id
    runs.make_predictions(second, data, lambda _: None)
    new = runs.compute_metrics(second, v4_specs, data, lambda _: None)
    publish_results(v4_specs, data, lambda _: None)
    assert sum(appended) == 0 and new.generation_key == old.generation_key and new.versions.parser == "v4"
    unreadable = sum(1 for i in range(1045) if V4_STYLES[i % len(V4_STYLES)] == "I cannot tell.")
    v4_only = sum(1 for i in range(1045) if i % len(V4_STYLES) < 5)  # the first five styles
    assert old.parse_rate == pytest.approx((1045 - unreadable - v4_only) / 1045)
    assert new.parse_rate == pytest.approx((1045 - unreadable) / 1045)

    snap = open_current(data)
    rows = dict(snap.con.execute("SELECT run_id, superseded_by FROM results").fetchall())
    snap.close()
    assert rows == {old.run_id: new.run_id, new.run_id: None}
