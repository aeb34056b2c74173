"""clinicalqa prompts from the spec's template: exam block only when present, options A.-E."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from pipelines.backends.base import PromptItem
from support.plugins import specs as load_specs
from pipelines.tasks.clinicalqa.settings import ChoiceSettings
from pipelines.tasks.clinicalqa.items import (
    UNCATEGORISED,
    build_prompt,
    items_table,
    prompt_items,
    template_hash,
)
from support.paths import SAMPLES as SHARED_SAMPLES

SAMPLE = SHARED_SAMPLES / "clinicalqa-sample.jsonl"


@pytest.fixture(scope="module")
def settings() -> ChoiceSettings:
    choice = load_specs().task("clinicalqa@0").choice
    assert choice is not None
    return choice


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]


def _small_template() -> ChoiceSettings:
    return ChoiceSettings(
        n_items=1,
        options=["A", "B", "C", "D", "E"],
        parser="v1",
        max_new_tokens=8,
        temperature=0.0,
        prompt_template="Q: {question}\n{exam_block}A. {option_A}\nB. {option_B}\nC. {option_C}\nD. {option_D}\nE. {option_E}",
        exam_template="Exam: {exam}\n",
    )


def test_exact_prompt_with_and_without_exam(rows: list[dict]) -> None:
    small = _small_template()
    assert build_prompt(rows[0], small) == (
        "Q: 58세 남자가 30분 전부터 시작된 가슴 통증으로 응급실에 왔다. 가장 먼저 시행할 검사는?\n"
        "Exam: 혈압 150/90 mmHg, 맥박 98회/분\n"
        "A. 흉부 CT\nB. 심전도\nC. 심초음파\nD. 운동부하검사\nE. 관상동맥조영술"
    )
    assert build_prompt(rows[1], small) == (
        "Q: 3일 전부터 발열과 배뇨통이 있는 32세 여자에게 가장 적절한 치료는?\n"
        "A. 경과 관찰\nB. 항진균제\nC. 경구 항생제\nD. 스테로이드\nE. 수술"
    )


def test_whitespace_only_exam_is_no_exam(rows: list[dict]) -> None:
    small = _small_template()
    assert build_prompt({**rows[0], "exam": "  \n "}, small) == build_prompt({**rows[0], "exam": ""}, small)
    assert build_prompt({**rows[0], "exam": None}, small) == build_prompt({**rows[0], "exam": ""}, small)


def test_spec_template(rows: list[dict], settings: ChoiceSettings) -> None:
    with_exam = build_prompt(rows[0], settings)
    without = build_prompt(rows[1], settings)
    assert rows[0]["question"] in with_exam
    assert "검사 소견: 혈압 150/90 mmHg, 맥박 98회/분" in with_exam
    assert "검사 소견" not in without
    for letter, text in zip("ABCDE", ["경과 관찰", "항진균제", "경구 항생제", "스테로이드", "수술"]):
        assert f"\n{letter}. {text}\n" in without
    assert "정답: X" in without.splitlines()[-1]
    assert "{" not in with_exam and "{" not in without


def test_template_hash_follows_both_templates(settings: ChoiceSettings) -> None:
    h = template_hash(settings)
    assert len(h) == 64 and h == template_hash(settings)
    assert template_hash(msgspec.structs.replace(settings, exam_template="소견: {exam}\n")) != h
    assert template_hash(msgspec.structs.replace(settings, prompt_template=settings.prompt_template + " ")) != h
    assert template_hash(msgspec.structs.replace(settings, max_new_tokens=1)) == h


def test_items_table(rows: list[dict], settings: ChoiceSettings) -> None:
    rows = [*rows, {**rows[0], "question_id": 900004, "category": ""}]
    table = items_table(rows, settings)
    assert table.column_names == ["instance_id", "label", "category", "prompt", "options", "purpose", "source"]
    assert table.column("instance_id").to_pylist() == ["900001", "900002", "900003", "900004"]
    assert table.column("label").to_pylist() == ["B", "C", "A", "B"]
    assert table.column("category").to_pylist() == ["Cardiology", "Infectious Disease", "Neurology", UNCATEGORISED]
    assert table.column("prompt").to_pylist()[1] == build_prompt(rows[1], settings)
    assert prompt_items(table)[2] == PromptItem(instance_id="900003", prompt=build_prompt(rows[2], settings))
