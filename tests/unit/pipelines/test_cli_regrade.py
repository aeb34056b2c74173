"""``medbench eval MODEL TASK --judge SLUG`` (issue 44): the stored answers regraded by another judge,
the answering model never called; missing answers, the task's own judge and a task without a judge
are told apart. The engine steps are stand-ins here (the rubric family's own regrade is covered in
test_rubric.py and end to end in tests/e2e/test_rubric_judges.py); what is under test is the command."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from types import SimpleNamespace

import msgspec
import pytest
from support.api_data import RUNS, make_record

from pipelines.cli import regrade as cli_regrade
from pipelines.engine import evaluate as engine
from pipelines.engine import release as release_module
from medbench.layout import DataDir
from medbench.records import UsagePart

TASK = SimpleNamespace(ref="clinicalqa-open@0")
MODEL = SimpleNamespace(slug="kgpu/medgemma-27b")


@dataclass(frozen=True)
class Ev:  # the fields of an Evaluation the command reads or replaces
    run_id: str
    backend: object


class Answerer:
    def __init__(self):
        self.calls = 0

    def text_generator(self, *a, **k):
        self.calls += 1
        return object()


def _args(**kw):
    return argparse.Namespace(judge="judges/other", json=False, force=False, api_url=None, **kw)


@pytest.fixture()
def engine_stub(tmp_path, monkeypatch):
    """resolve_evaluation/existing_result/make_predictions/compute_metrics/release as the rubric family behaves:
    ``answers_stored`` False makes make_predictions ask the answering backend for a generator."""
    monkeypatch.setenv("MEDBENCH_DATA", str(tmp_path))
    data = DataDir(tmp_path)
    answerer = Answerer()
    state = SimpleNamespace(answers_stored=True, stored={"orig"}, released=0, answerer=answerer, predicted=0)
    record = make_record(data, "medgemma-cqa0", RUNS["medgemma-cqa0"])
    record = msgspec.structs.replace(record, run_id="regr", usage=msgspec.structs.replace(
        record.usage, judging=UsagePart(prompt_tokens=1, completion_tokens=1, wall_seconds=0.1, cost_usd=0.0)))

    def resolve_evaluation(specs, data, task_ref, model_slug, judge=None):
        if judge == "nobody/none":
            raise KeyError("unknown model 'nobody/none'")
        return Ev(run_id="orig" if judge in (None, "judges/own") else "regr", backend=answerer)

    def make_predictions(ev, data, log):
        state.predicted += 1
        if not state.answers_stored:
            ev.backend.text_generator()
        log("all answers stored; the answering model is not called")

    monkeypatch.setattr(engine, "resolve_evaluation", resolve_evaluation)
    monkeypatch.setattr(engine, "existing_result", lambda data, run: record if run in state.stored else None)
    monkeypatch.setattr(engine, "make_predictions", make_predictions)
    monkeypatch.setattr(engine, "compute_metrics", lambda ev, specs, data, log: record)
    monkeypatch.setattr(release_module, "publish_results", lambda specs, data, log: setattr(state, "released", state.released + 1))
    return state


def test_a_regrade_reads_stored_answers_and_says_no_answering_model_was_called(engine_stub, capsys):
    assert cli_regrade.regrade(_args(), None, TASK, MODEL) == 0
    out = capsys.readouterr().out
    assert "regraded kgpu/medgemma-27b on clinicalqa@0 with judge judges/other: run regr" in out
    assert "no answering model was called" in out and "&judge=judges/other" in out
    assert engine_stub.answerer.calls == 0 and engine_stub.released == 1
    engine_stub.stored.add("regr")  # rule one: done already, nothing runs again
    assert cli_regrade.regrade(_args(), None, TASK, MODEL) == 0
    assert "already regraded" in capsys.readouterr().out and engine_stub.predicted == 1


def test_an_answer_not_stored_refuses_to_call_the_answering_model(engine_stub, capsys):
    engine_stub.answers_stored = False
    assert cli_regrade.regrade(_args(), None, TASK, MODEL) == 1
    err = capsys.readouterr().err
    assert err.startswith("medbench eval: not every answer of kgpu/medgemma-27b is stored") and "Traceback" not in err
    assert engine_stub.answerer.calls == 0 and engine_stub.released == 0


def test_no_original_run_own_judge_and_unknown_judge_are_errors(engine_stub, capsys):
    engine_stub.stored.clear()
    assert cli_regrade.regrade(_args(), None, TASK, MODEL) == 1
    assert "run `medbench eval kgpu/medgemma-27b clinicalqa-open@0` first" in capsys.readouterr().err
    engine_stub.stored.add("orig")
    assert cli_regrade.regrade(argparse.Namespace(judge="judges/own", json=False, force=False), None, TASK, MODEL) == 2
    assert "own judge: leave out --judge" in capsys.readouterr().err
    assert cli_regrade.regrade(argparse.Namespace(judge="nobody/none", json=False, force=False), None, TASK, MODEL) == 2
    assert capsys.readouterr().err.strip() == "medbench eval: unknown model 'nobody/none'"
    assert engine_stub.predicted == 0


def test_eval_judge_with_the_api_unreachable_regrades_locally(engine_stub, monkeypatch, capsys):
    from pipelines.cli import eval as cli_eval
    from pipelines.cli.main import build_parser

    args = build_parser().parse_args(["eval", "kgpu/medgemma-27b", "clinicalqa-open@0", "--judge", "judges/other",
                                      "--api-url", "http://127.0.0.1:9"])
    monkeypatch.setattr(cli_eval, "_resolve", lambda a: (None, TASK, MODEL))
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "checking the local published warehouse instead" in out and "no answering model was called" in out
    assert engine_stub.answerer.calls == 0 and engine_stub.released == 1
