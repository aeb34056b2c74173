"""The demo of clinicalqa-open@0: a free-text panel, a simulated judge that disagrees with itself, and
judged run ids (docs/adding-a-task.md, "The rubric kind and clinicalqa-open")."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from pipelines.backends.matching_judge import grade
from pipelines.datasets.clinicalqa.demo import demo_clinicalqa_rows
from pipelines.datasets.clinicalqa.simulated import replay_bytes
from pipelines.datasets.clinicalqa.simulated_open import OUTPUTS_DIR, PANEL, simulate
from pipelines.engine.identity import run_id
from medbench.stats.rubric import item_scores, judge_agreement
from pipelines.tasks.clinicalqa_open.family import items_table
from pipelines.tasks.clinicalqa_open.judging import judge_prompt, parse_verdicts
from support.plugins import specs

SPECS = specs()
TASK = SPECS.task("clinicalqa-open@0")
ROWS = demo_clinicalqa_rows()


def test_at_least_six_answerers_in_different_styles_each_committed_and_demo_only():
    assert len(PANEL) >= 6 and len({p.style for p in PANEL}) == len(PANEL)
    for p in PANEL:
        model = SPECS.model(f"medbench-sim-open/{p.name}")
        assert model.tasks == ["clinicalqa-open@0"] and model.settings.demo_only is True
        assert model.description.startswith("SIMULATED, not a real model")
        assert (OUTPUTS_DIR / f"{p.name}.jsonl").read_bytes() == replay_bytes(simulate(p, ROWS))


def _judged(style_name: str, n: int, samples: int = 3):
    judge = SPECS.model(TASK.settings.demo_judge)
    items = items_table(ROWS[:n], TASK.settings).to_pylist()
    answers = {r.instance_id: r.output for r in simulate(next(p for p in PANEL if p.name == style_name), ROWS[:n])}
    met, points = [], []
    for item in items:
        prompt = judge_prompt(TASK.settings.judge_prompt_template, item["prompt"], answers[item["instance_id"]],
                              item["criteria"])
        per = [parse_verdicts(grade(prompt, f"{item['instance_id']}#{s}", judge.settings.seed, judge.settings.flip),
                              item["criteria"]) for s in range(samples)]
        assert all(ok for _, ok in per)
        met.append([[v[k][0] for v, _ in per] for k in range(len(item["criteria"]))])
        points.append([c["points"] for c in item["criteria"]])
    return np.array(met, dtype=bool), np.array(points)


def test_the_simulated_judge_grades_by_content_and_its_samples_disagree_reproducibly():
    met, points = _judged("concise", 60)
    scores = item_scores(met, points).mean(axis=1)
    shotgun = item_scores(*_judged("shotgun", 60)).mean(axis=1)
    assert scores.mean() > 0.5 > shotgun.mean()  # naming every option loses the distractors' points
    agreement = judge_agreement(met, np.ones(met.shape[:2], dtype=bool))
    assert 0.6 < agreement < 0.95  # seeded disagreement: the board shows the judge's uncertainty
    again, _ = _judged("concise", 60)
    assert np.array_equal(met, again)


def test_only_a_judged_task_puts_its_judge_in_the_run_id():
    model = SPECS.model("medbench/random")
    for ref in ("clinicalqa@0", "vitaldb-ioh@0"):
        task = SPECS.task(ref)
        assert SPECS.family_of(task).judge(task) is None and SPECS.family_of(task).judge(task, True) is None
    family = SPECS.family_of(TASK)
    assert family.judge(TASK) == "google/medgemma-27b-text-it"
    assert family.judge(TASK, demo=True) == "medbench-sim-open/judge"
    answerer = SPECS.model("medbench-sim-open/concise")
    plain = run_id(answerer, TASK, "snap")
    a = run_id(answerer, TASK, "snap", judge=SPECS.model("medbench-sim-open/judge"))
    b = run_id(answerer, TASK, "snap", judge=SPECS.model("google/medgemma-27b-text-it"))
    assert len({plain, a, b}) == 3
    assert run_id(model, SPECS.task("clinicalqa@0"), "snap") == run_id(model, SPECS.task("clinicalqa@0"), "snap",
                                                                           judge=None)


def test_the_judge_spec_is_demo_only(tmp_path: Path):
    from pipelines.backends.registry import RuleBackend
    from medbench.layout import DataDir

    real = DataDir(tmp_path / "real")
    real.claim("real")
    judge = SPECS.model("medbench-sim-open/judge")
    assert RuleBackend().not_runnable_reason(judge, real) is not None
    assert parse_verdicts(grade("a prompt in another shape", "1#0", 1, 0.0), [{"id": "gold"}])[1] is False


def _predictions(style_name: str, n: int):
    from pipelines.tasks.clinicalqa_open.family import predictions_table

    judge = SPECS.model(TASK.settings.demo_judge)
    items = items_table(ROWS[:n], TASK.settings).to_pylist()
    answers = {r.instance_id: r.output for r in simulate(next(p for p in PANEL if p.name == style_name), ROWS[:n])}
    verdicts = {}
    for item in items:
        prompt = judge_prompt(TASK.settings.judge_prompt_template, item["prompt"], answers[item["instance_id"]],
                              item["criteria"])
        verdicts[item["instance_id"]] = [parse_verdicts(grade(prompt, f"{item['instance_id']}#{s}", judge.settings.seed,
                                                              judge.settings.flip), item["criteria"])[0]
                                         for s in range(3)]
    return predictions_table(items, answers, verdicts, None)


def test_the_judge_scorecard_against_the_demo_reference_grades_and_its_threshold():
    from msgspec.structs import replace

    from pipelines.datasets.clinicalqa.simulated_open import REFERENCE, reference_grades
    from pipelines.tasks.clinicalqa_open.scorecard import judge_scorecard, read_reference

    assert REFERENCE.read_bytes() == reference_grades(ROWS)  # committed = generated
    reference = read_reference(TASK.settings.reference_grades)
    graded = _predictions("hedging", 50)
    card = judge_scorecard(graded, reference, 0.6, 300, 1)
    assert card is not None and card.n_items == 40  # only the answers a physician graded
    assert card.kappa_low <= card.kappa <= card.kappa_high and 0.6 < card.kappa <= 1
    assert card.passed and not judge_scorecard(graded, reference, 0.999, 300, 1).passed
    assert judge_scorecard(_predictions("english", 20), reference, 0.6, 300, 1) is None  # none of its answers graded
    family = SPECS.family_of(TASK)
    strict = replace(TASK, rubric=replace(TASK.settings, min_judge_kappa=0.999))
    ids = set(graded.column("instance_id").to_pylist())
    checks = {c.name: c.passed for c in family.prediction_checks(strict, graded, ids)}
    assert checks == {"every_instance_predicted_once": True, "judge_replies_read": True, "judge_scorecard": False}
    assert {c.name: c.passed for c in family.prediction_checks(TASK, graded, ids)}["judge_scorecard"] is True


def test_the_demo_loopback_endpoint_judges_through_the_openai_backend_and_regrading_answers_nothing(tmp_path: Path):
    """The judge is any text backend: here the openai backend against the demo's loopback
    OpenAI-compatible endpoint (model ``judge``); a second judge prompt regrades the stored answers
    and the answering model (counted) is not called again."""
    from dataclasses import replace as dc_replace

    from pipelines.backends.openai_backend import OpenAIChatGenerator
    from medbench.outcomes import Usage
    from pipelines.engine.generations import Generation
    from pipelines.datasets.clinicalqa.simulated_server import SimulatedChatServer
    from pipelines.tasks.clinicalqa_open.family import predictions_table
    from pipelines.tasks.clinicalqa_open.judging import AnswerAndJudge, Judge
    from medbench.layout import DataDir

    items = items_table(ROWS[:12], TASK.settings).to_pylist()
    calls: list[str] = []

    replies = {r.instance_id: r.output for r in simulate(next(p for p in PANEL if p.name == "concise"), ROWS[:12])}

    class CountingReplay:  # the concise answerer's replies, each call counted
        def generate(self, prompts, store, log):
            calls.extend(p.instance_id for p in prompts)
            store.append(Generation(p.instance_id, replies[p.instance_id]) for p in prompts)
            return Usage(wall_seconds=0.0)

    backend = SimpleNamespace(max_new_tokens=lambda m, cap: cap, published=lambda s: {},
                              text_generator=lambda *a, **k: CountingReplay())
    ev = SimpleNamespace(backend=backend, model=SimpleNamespace(slug="medbench-sim-open/concise", revision="r",
                                                                backend="replay", settings={}),
                         snapshot_id="snap", partition_key="p", task=SimpleNamespace(bootstrap={}))
    data = DataDir(tmp_path / "data")
    with SimulatedChatServer() as server:
        judge = Judge(model="demo-sim/judge", revision="1", prompt_sha256="a", samples=2, temperature=0.0,
                      max_new_tokens=512, backend="openai", backend_settings={"base_url": server.base_url},
                      generator=lambda: OpenAIChatGenerator(server.base_url, "judge", 512, concurrency=2))
        problem = AnswerAndJudge(items=items, prompt_hash="h", max_new_tokens=256, temperature=0.0,
                                 judge_for=lambda d: judge, judge_template=TASK.settings.judge_prompt_template,
                                 table=lambda a, v, j: predictions_table(items, a, v, j), config={})
        first = problem.solve(ev, data, lambda m: None)
        assert len(calls) == 12 and first.config["judge_replies_unread"] == 0
        second = dc_replace(problem, judge_for=lambda d: dc_replace(judge, prompt_sha256="b")).solve(ev, data,
                                                                                                    lambda m: None)
    assert len(calls) == 12  # regraded: no answering call
    assert first.config["judge_generation_key"] != second.config["judge_generation_key"]
    scores = first.table.column("score").to_pylist()
    answers = first.table.column("answer").to_pylist()
    for item, score, answer in zip(items, scores, answers):  # the endpoint's judge: string matching, no flips
        gold = next(c for c in item["criteria"] if c["id"] == "gold")["text"].rsplit(": ", 1)[-1]
        assert (score > 0) == (gold in answer)
