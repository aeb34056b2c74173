"""Replay files: strict reading (lines, types, ids) and the generator that stores their outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.engine.generations import GenerationStore
from pipelines.backends.base import PromptItem
from pipelines.backends.replay import ReplayError, ReplayGenerator, read_replay

IDS = ["101", "102", "103"]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _good_lines() -> list[str]:
    return [
        json.dumps({"instance_id": "101", "output": "정답: A"}, ensure_ascii=False),
        json.dumps({"instance_id": 102, "output": "The answer is B"}),
        json.dumps({"instance_id": "103", "output": "", "extra": {"tokens": 3}}),
    ]


def test_reads_string_and_integer_ids(tmp_path: Path) -> None:
    path = _write(tmp_path / "out.jsonl", _good_lines()[:2] + ["", "   "] + _good_lines()[2:])
    assert read_replay(path, IDS) == {"101": "정답: A", "102": "The answer is B", "103": ""}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", r"line 2: not valid JSON"),
        ('["101", "x"]', r"line 2: expected a JSON object with instance_id and output, got list"),
        ('{"output": "A"}', r"line 2: field `instance_id` is missing"),
        ('{"instance_id": "102"}', r"line 2: field `output` is missing"),
        (
            '{"instance_id": 102.0, "output": "A"}',
            r"line 2: field `instance_id` must be a string or an integer, got 102\.0",
        ),
        (
            '{"instance_id": true, "output": "A"}',
            r"line 2: field `instance_id` must be a string or an integer, got True",
        ),
        ('{"instance_id": "102", "output": null}', r"line 2: field `output` must be a string, got NoneType"),
        ('{"instance_id": "102", "output": ["A"]}', r"line 2: field `output` must be a string, got list"),
    ],
)
def test_bad_lines_name_the_line(tmp_path: Path, bad: str, message: str) -> None:
    lines = _good_lines()
    lines[1] = bad
    with pytest.raises(ReplayError, match=message):
        read_replay(_write(tmp_path / "out.jsonl", lines), IDS)


def test_id_mismatches_are_all_reported_together(tmp_path: Path) -> None:
    lines = [
        json.dumps({"instance_id": "101", "output": "A"}),
        json.dumps({"instance_id": "999", "output": "B"}),
        json.dumps({"instance_id": 101, "output": "C"}),
        json.dumps({"instance_id": "998", "output": "D"}),
    ]
    with pytest.raises(ReplayError) as info:
        read_replay(_write(tmp_path / "out.jsonl", lines), IDS)
    message = str(info.value)
    assert "does not match the task's 3 items" in message
    assert "1 duplicate instance id (e.g. '101' (lines 1 and 3))" in message
    assert "2 unknown instance ids (e.g. '999' (line 2), '998' (line 4))" in message
    assert "2 missing instance ids (e.g. '102', '103')" in message


def test_many_missing_ids_are_counted_and_sampled(tmp_path: Path) -> None:
    ids = [str(i) for i in range(50)]
    path = _write(tmp_path / "out.jsonl", [json.dumps({"instance_id": 0, "output": "A"})])
    with pytest.raises(ReplayError, match=r"49 missing instance ids \(e\.g\. '1', '2', '3', '4', '5', \.\.\.\)"):
        read_replay(path, ids)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="cannot read the replay file"):
        read_replay(tmp_path / "absent.jsonl", IDS)
    (tmp_path / "latin1.jsonl").write_bytes(b'{"instance_id": "101", "output": "\xe9"}\n')
    with pytest.raises(ReplayError, match="not UTF-8"):
        read_replay(tmp_path / "latin1.jsonl", IDS)


def test_generator_fills_the_store_and_resumes(tmp_path: Path) -> None:
    path = _write(tmp_path / "out.jsonl", _good_lines())
    items = [PromptItem(instance_id=i, prompt=f"prompt {i}") for i in IDS]
    store = GenerationStore(tmp_path / "gen" / "store.jsonl")
    logs: list[str] = []
    usage = ReplayGenerator(path).generate(items, store, logs.append)
    assert {k: g.output for k, g in store.load().items()} == read_replay(path, IDS)
    assert usage.prompt_tokens is None and "replay" in usage.hardware
    assert any("3 not yet stored" in line for line in logs)
    size = store.path.stat().st_size
    ReplayGenerator(path).generate(items, store, logs.append)
    assert store.path.stat().st_size == size  # nothing appended twice
    assert any("0 not yet stored" in line for line in logs)


def test_generator_refuses_a_mismatched_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "out.jsonl", _good_lines()[:2])
    store = GenerationStore(tmp_path / "store.jsonl")
    with pytest.raises(ReplayError, match="1 missing instance id"):
        ReplayGenerator(path).generate([PromptItem(i, "p") for i in IDS], store, lambda _: None)
    assert store.load() == {}
