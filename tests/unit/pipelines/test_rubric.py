"""The rubric kind and clinicalqa-open (docs/adding-a-task.md, "The rubric kind and clinicalqa-open";
docs/statistics.md, "Rubric scores and the judge's uncertainty")."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import pytest

from medbench.outcomes import Usage
from pipelines.engine.generations import Generation
from medbench.kinds import kind
from medbench.stats.rubric import (
    cohens_kappa, item_scores, judge_agreement, macro_f1, rubric_interval, scorecard,
)
from pipelines.tasks.clinicalqa_open.family import PREDICTIONS_SCHEMA, predictions_table
from pipelines.tasks.clinicalqa_open.judging import SAMPLE_SEP, UNGRADED, AnswerAndJudge, Judge, parse_verdicts
from pipelines.tasks.clinicalqa_open.rubric_rule import derive_criteria, rubric_sha256
from pipelines.tasks.clinicalqa_open.scoring import grade_arrays
from medbench.layout import DataDir


def test_item_score_formula_against_hand_computed_items():
    # item 0: gold (5) met, distractor (-2) met, reasoning (1) not met -> (5 - 2) / 6 = 0.5
    # item 1: gold not met, distractor met -> -2 / 6 clipped to 0
    # item 2: everything positive met, padding column ignored -> 6 / 6 = 1
    points = np.array([[5, -2, 1], [5, -2, 1], [5, 1, 0]], dtype=float)
    met = np.array([[[1], [1], [0]], [[0], [1], [0]], [[1], [1], [0]]], dtype=bool)
    assert item_scores(met, points)[:, 0].tolist() == pytest.approx([0.5, 0.0, 1.0])
    # two judge samples: the item's score is the mean of its samples' scores
    two = np.concatenate([met, np.zeros_like(met)], axis=2)
    assert item_scores(two, points).mean(axis=1).tolist() == pytest.approx([0.25, 0.0, 0.5])


def test_two_stage_interval_covers_with_a_noisy_judge_where_items_only_falls_short():
    rng = np.random.default_rng(0)
    n, k, s, sims, flip = 20, 4, 3, 400, 0.3
    both = items = 0
    for t in range(sims):
        quality = rng.beta(4, 4, size=n)
        truth = rng.random((n, k)) < quality[:, None]
        met = truth[:, :, None] ^ (rng.random((n, k, s)) < flip)  # the judge flips 30% of verdicts
        iv = rubric_interval(item_scores(met, np.ones((n, k))), 1000, t)
        target = 0.5  # E[quality] (1 - flip) + (1 - E[quality]) flip
        both += iv.ci_low <= target <= iv.ci_high
        items += iv.ci_low_items_only <= target <= iv.ci_high_items_only
    assert both / sims >= 0.94
    assert items / sims < 0.94


def test_judge_agreement_and_scorecard():
    met = np.array([[[1, 1, 1], [0, 1, 0]], [[0, 0, 0], [1, 1, 1]]], dtype=bool)
    present = np.array([[True, True], [True, False]])
    assert judge_agreement(met, present) == pytest.approx(2 / 3)
    judge = np.array([1, 1, 0, 0, 1, 0], dtype=bool)
    ref = np.array([1, 0, 0, 0, 1, 1], dtype=bool)
    # met: tp 2 fp 1 fn 1 -> 2/3; not met: tp 2 fp 1 fn 1 -> 2/3
    assert macro_f1(judge, ref) == pytest.approx(2 / 3)
    assert cohens_kappa(judge, ref) == pytest.approx((4 / 6 - 0.5) / 0.5)
    card = scorecard(judge, ref, np.array([0, 0, 1, 1, 2, 2]), 200, 1)
    assert card.n_items == 3 and card.macro_f1_low <= card.macro_f1 <= card.macro_f1_high


SETTINGS = SimpleNamespace(rule="v1", gold_points=5.0, distractor_points=-2.0, reasoning_points=1.0,
                           explanation_chars=20)
ROW = {"question_id": 7, "answer": "C", "explanation": "Because the troponin rise defines an NSTEMI here.",
       "options": {"option_A": "Aspirin", "option_B": "CT", "option_C": "PCI", "option_D": "Rest", "option_E": " "}}


def test_rubric_derivation_rule_v1():
    criteria = derive_criteria(ROW, SETTINGS)
    assert [(c.id, c.points, c.tags) for c in criteria] == [
        ("gold", 5.0, ["answer"]), ("avoid-A", -2.0, ["distractor"]), ("avoid-B", -2.0, ["distractor"]),
        ("avoid-D", -2.0, ["distractor"]), ("reasoning", 1.0, ["reasoning"])]  # an empty option E earns nothing
    assert criteria[0].text.endswith("PCI")
    assert criteria[-1].text.endswith("Because the troponin")  # explanation cut to explanation_chars
    assert derive_criteria({**ROW, "explanation": ""}, SETTINGS)[-1].id == "avoid-D"
    assert rubric_sha256(criteria) != rubric_sha256(criteria[:-1])
    with pytest.raises(ValueError, match="unknown rubric rule"):
        derive_criteria(ROW, SimpleNamespace(**{**vars(SETTINGS), "rule": "v9"}))


def test_parse_verdicts_reads_a_batch_and_marks_what_it_misses():
    crit = [{"id": "gold"}, {"id": "avoid-A"}]
    reply = 'Sure: {"grades": [{"id": "gold", "met": true, "justification": "names PCI\\nmore"}]}'
    assert parse_verdicts(reply, crit) == ([(True, "names PCI"), (False, UNGRADED)], True)
    assert parse_verdicts("no json", crit)[1] is False


@dataclass
class Counting:
    """A text generator that counts the prompts it is asked, answering with ``reply(prompt item)``."""

    reply: object
    calls: list = field(default_factory=list)

    def generate(self, items, store, log):
        self.calls.extend(i.instance_id for i in items)
        store.append([Generation(i.instance_id, self.reply(i)) for i in items])
        return Usage(wall_seconds=0.0, prompt_tokens=len(items), completion_tokens=len(items))


def _problem(judge_gen, prompt_sha="p1"):
    crit = [{"id": "gold", "text": "t", "points": 5.0, "tags": []}, {"id": "avoid-A", "text": "u", "points": -2.0,
                                                                     "tags": []}]
    items = [{"instance_id": str(i), "prompt": f"q{i}", "criteria": crit, "rubric_sha256": "h"} for i in range(4)]
    judge = Judge(model="x/judge", revision="1", prompt_sha256=prompt_sha, samples=2, temperature=0.0,
                  max_new_tokens=64, backend="fake", backend_settings={}, generator=lambda: judge_gen)
    return AnswerAndJudge(items=items, prompt_hash="h", max_new_tokens=64, temperature=0.0,
                          judge_for=lambda data: judge, judge_template="{prompt}|{answer}|{criteria}",
                          table=lambda a, v, j: predictions_table(items, a, v, j), config={})


def test_regrading_calls_the_judge_only_and_usage_keeps_them_apart(tmp_path):
    answerer = Counting(lambda i: f"answer to {i.instance_id}")
    backend = SimpleNamespace(max_new_tokens=lambda m, cap: cap, published=lambda s: {},
                              text_generator=lambda *a, **k: answerer)
    ev = SimpleNamespace(backend=backend, model=SimpleNamespace(slug="m/a", revision="1", backend="fake", settings={}),
                         snapshot_id="snap", partition_key="t|m", task=SimpleNamespace(bootstrap={}))
    data = DataDir(tmp_path)
    judge_a = Counting(lambda i: json.dumps({"grades": [{"id": "gold", "met": i.instance_id.endswith("0"),
                                                          "justification": "ok"}]}))
    first = _problem(judge_a).solve(ev, data, lambda m: None)
    assert len(answerer.calls) == 4 and len(judge_a.calls) == 8  # one call per answer and sample: a batch
    assert first.usage["answering"]["prompt_tokens"] == 4 and first.usage["judging"]["prompt_tokens"] == 8
    assert first.table.schema == PREDICTIONS_SCHEMA
    assert first.table.column("score").to_pylist() == [0.5] * 4  # gold met in sample 0 only: (5/5 + 0) / 2
    judge_b = Counting(lambda i: json.dumps({"grades": [{"id": "gold", "met": True, "justification": "ok"},
                                                        {"id": "avoid-A", "met": False, "justification": "no"}]}))
    second = _problem(judge_b, prompt_sha="p2").solve(ev, data, lambda m: None)
    assert len(answerer.calls) == 4  # the stored answers were regraded: the answering model was not called
    assert len(judge_b.calls) == 8 and second.table.column("score").to_pylist() == [1.0] * 4
    assert second.config["judge"]["prompt_sha256"] == "p2"
    assert second.table.column("answer").to_pylist() == first.table.column("answer").to_pylist()
    met, points, present, ids = grade_arrays(second.table)
    assert met.shape == (4, 2, 2) and ids[0] == ["gold", "avoid-A"] and SAMPLE_SEP in judge_b.calls[0]


def test_the_rubric_kind_is_registered_and_compares_paired_scores():
    k = kind("rubric")
    a = {"score": np.array([1.0, 0.8, 0.6, 1.0]), "rubric_sha256": np.array(["a", "b", "c", "d"])}
    b = {"score": np.array([0.5, 0.4, 0.6, 0.2]), "rubric_sha256": np.array(["a", "b", "c", "d"])}
    c = k.compare(a, b, None, 500, 3)
    assert c.difference == pytest.approx(0.425) and c.ci_low > 0
    block = k.rank_intervals([a, b], None, 200, 3)
    assert block.n_items == 4
