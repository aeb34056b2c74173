"""Choice scoring: predictions table as docs/duckdb.md says, unparsable = wrong, metrics with CIs."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pyarrow as pa
import pytest

from pipelines.datasets.clinicalqa.demo import write_demo_clinicalqa
from pipelines.engine.generations import GenerationStore
from pipelines.backends.rule import UniformChoiceGenerator
from pipelines.tasks.clinicalqa.score import (
    PREDICTIONS_SCHEMA,
    ScoringError,
    predictions_table,
    score_choice,
    summarise_choice,
)
from pipelines.datasets.clinicalqa.source import (
    load_clinicalqa_snapshot,
    read_clinicalqa_snapshot,
)
from pipelines.engine.specs import BootstrapSpec, IntervalsSpec
from support.plugins import specs as load_specs
from medbench.stats.bootstrap import percentile_bootstrap_mean
from pipelines.tasks.clinicalqa.items import items_table, prompt_items

TASK = load_specs().task("clinicalqa@0")
SETTINGS = TASK.choice
BOOT = BootstrapSpec(replicates=400, seed=99, unit="item")

ITEMS = [
    {"instance_id": "1", "label": "A", "category": "Cardiology"},
    {"instance_id": "2", "label": "B", "category": "Cardiology"},
    {"instance_id": "3", "label": "C", "category": "Neurology"},
    {"instance_id": "4", "label": "D", "category": "Neurology"},
    {"instance_id": "5", "label": "E", "category": "Neurology"},
    {"instance_id": "6", "label": "A", "category": "Pediatrics"},
]
OUTPUTS = {
    "1": "정답: A",  # ok, correct
    "2": "The answer is C",  # ok, wrong
    "3": "정답: B 또는 C",  # ambiguous -> wrong even though C is the label
    "4": "   ",  # empty
    "5": "잘 모르겠습니다",  # no_answer
    "6": "<think>B?</think>\n정답: ①",  # ok, correct
}


def test_predictions_table_matches_the_contract() -> None:
    score = score_choice(ITEMS, OUTPUTS, SETTINGS, BOOT)
    table = score.predictions
    assert table.schema.equals(PREDICTIONS_SCHEMA)
    assert table.column_names == ["instance_id", "prediction", "label", "correct", "parse_status", "raw_output"]
    assert table.to_pylist() == [
        {
            "instance_id": "1",
            "prediction": "A",
            "label": "A",
            "correct": True,
            "parse_status": "ok",
            "raw_output": OUTPUTS["1"],
        },
        {
            "instance_id": "2",
            "prediction": "C",
            "label": "B",
            "correct": False,
            "parse_status": "ok",
            "raw_output": OUTPUTS["2"],
        },
        {
            "instance_id": "3",
            "prediction": None,
            "label": "C",
            "correct": False,
            "parse_status": "ambiguous",
            "raw_output": OUTPUTS["3"],
        },
        {
            "instance_id": "4",
            "prediction": None,
            "label": "D",
            "correct": False,
            "parse_status": "empty",
            "raw_output": OUTPUTS["4"],
        },
        {
            "instance_id": "5",
            "prediction": None,
            "label": "E",
            "correct": False,
            "parse_status": "no_answer",
            "raw_output": OUTPUTS["5"],
        },
        {
            "instance_id": "6",
            "prediction": "A",
            "label": "A",
            "correct": True,
            "parse_status": "ok",
            "raw_output": OUTPUTS["6"],
        },
    ]
    assert score.status_counts == {"ok": 3, "no_answer": 1, "ambiguous": 1, "empty": 1}


def test_metrics_order_values_and_intervals() -> None:
    score = score_choice(ITEMS, OUTPUTS, SETTINGS, BOOT)
    names = [m.name for m in score.metrics]
    assert names == ["accuracy", "parse_rate", "accuracy_upper", "accuracy[Cardiology]", "accuracy[Neurology]",
                     "accuracy[Pediatrics]"]
    values = {m.name: m.value for m in score.metrics}
    assert values["accuracy"] == pytest.approx(2 / 6)
    assert values["parse_rate"] == pytest.approx(3 / 6) == score.parse_rate
    assert values["accuracy[Cardiology]"] == pytest.approx(0.5)
    assert values["accuracy[Neurology]"] == 0.0
    assert values["accuracy[Pediatrics]"] == 1.0
    assert score.accuracy == score.metrics[0]
    assert score.n == 6
    for m in score.metrics:
        assert m.ci_low <= m.value <= m.ci_high
    expected = percentile_bootstrap_mean(np.array([1, 0, 0, 0, 0, 1], dtype=float), BOOT.replicates, BOOT.seed)
    assert tuple(score.metrics[0][1:4]) == tuple(expected) and score.metrics[0].method == "bootstrap-percentile"
    assert [(c.category, c.n) for c in score.by_category] == [("Cardiology", 2), ("Neurology", 3), ("Pediatrics", 1)]


def test_same_inputs_same_scores_and_table_or_rows_alike() -> None:
    rows = score_choice(ITEMS, OUTPUTS, SETTINGS, BOOT)
    table = score_choice(pa.Table.from_pylist(ITEMS), OUTPUTS, SETTINGS, BOOT)
    assert rows.metrics == table.metrics
    assert rows.predictions.equals(table.predictions)
    other_seed = score_choice(ITEMS, OUTPUTS, SETTINGS, BootstrapSpec(replicates=400, seed=100, unit="item"))
    assert other_seed.metrics[0].value == rows.metrics[0].value


def test_predictions_table_alone_equals_the_scored_table() -> None:
    rows_with_prompts = [{**item, "prompt": f"prompt {item['instance_id']}"} for item in ITEMS]
    table = predictions_table(rows_with_prompts, OUTPUTS)
    assert table.equals(score_choice(ITEMS, OUTPUTS, SETTINGS, BOOT).predictions)
    with pytest.raises(ScoringError, match=r"1 of 6 items have no output \(e\.g\. '6'\)"):
        predictions_table(ITEMS, {k: v for k, v in OUTPUTS.items() if k != "6"})


def test_missing_output_is_an_error() -> None:
    outputs = {k: v for k, v in OUTPUTS.items() if k not in {"2", "5"}}
    with pytest.raises(ScoringError, match=r"2 of 6 items have no output \(e\.g\. '2', '5'\)"):
        score_choice(ITEMS, outputs, SETTINGS, BOOT)


def test_unknown_parser_version_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown answer parser 'v9'; known: v1, v2"):
        score_choice(ITEMS, OUTPUTS, msgspec.structs.replace(SETTINGS, parser="v9"), BOOT)


def test_repeated_items_are_refused() -> None:
    with pytest.raises(ScoringError, match="repeat instance ids: '1'"):
        score_choice([*ITEMS, ITEMS[0]], OUTPUTS, SETTINGS, BOOT)


def test_uniform_random_on_the_demo_scores_near_one_fifth(tmp_path: Path) -> None:
    spec = load_specs().datasets["clinicalqa"]
    write_demo_clinicalqa(tmp_path / "demo.jsonl")
    snap = load_clinicalqa_snapshot(
        spec, SETTINGS.n_items, tmp_path, source=str(tmp_path / "demo.jsonl"), log=lambda _: None
    )
    items = items_table(read_clinicalqa_snapshot(snap.path), SETTINGS)
    store = GenerationStore(tmp_path / "gen.jsonl")
    model = load_specs().model("medbench/random")
    UniformChoiceGenerator.from_settings(model.settings).generate(prompt_items(items), store, lambda _: None)
    outputs = {k: g.output for k, g in store.load().items()}
    score = score_choice(items, outputs, SETTINGS, TASK.bootstrap)
    assert score.n == 1045 and score.parse_rate == 1.0
    accuracy = score.accuracy
    assert 0.15 < accuracy.value < 0.25
    assert accuracy.ci_low < accuracy.value < accuracy.ci_high
    assert accuracy.ci_high - accuracy.ci_low < 0.07
    assert len(score.metrics) == 3 + len(score.by_category)  # accuracy, parse_rate, accuracy_upper


# --------------------------------------------------------------------------- Wilson intervals at the edges

WILSON = IntervalsSpec(proportion="wilson")


def _edge_table(correct: bool, parsed: bool, n: int = 1045) -> pa.Table:
    return pa.table({
        "instance_id": [str(i) for i in range(n)], "prediction": ["A" if parsed else None] * n, "label": ["A"] * n,
        "correct": [correct] * n, "parse_status": ["ok" if parsed else "no_answer"] * n, "raw_output": ["x"] * n,
    }, schema=PREDICTIONS_SCHEMA)


def test_wilson_zero_correct_is_not_a_zero_width_interval() -> None:
    """`0/1045 correct` shows `[0.000, 0.004]`; the bootstrap would show [0, 0]."""
    score = summarise_choice(_edge_table(correct=False, parsed=True), ["c"] * 1045, BOOT, WILSON)
    acc = score.accuracy
    assert acc.value == 0.0 and acc.ci_low == 0.0 and acc.method == "wilson"
    assert f"[{acc.ci_low:.3f}, {acc.ci_high:.3f}]" == "[0.000, 0.004]"
    assert all(m.method == "wilson" for m in score.metrics)
    assert score.by_category[0].ci_high == pytest.approx(acc.ci_high)


def test_wilson_full_parse_rate_is_not_one_one() -> None:
    """`1045/1045` parse rate is not `[1, 1]`."""
    score = summarise_choice(_edge_table(correct=True, parsed=True), ["c"] * 1045, BOOT, WILSON)
    rate = score.metrics[1]
    assert rate.name == "parse_rate" and rate.value == 1.0 and rate.ci_high == 1.0
    assert rate.ci_low < 1.0 and f"{rate.ci_low:.3f}" == "0.996"


def test_default_intervals_keep_the_bootstrap_of_earlier_results() -> None:
    score = summarise_choice(_edge_table(correct=False, parsed=True), ["c"] * 1045, BOOT)
    assert (score.accuracy.ci_low, score.accuracy.ci_high, score.accuracy.method) == (0.0, 0.0, "bootstrap-percentile")
