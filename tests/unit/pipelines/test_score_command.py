"""`medbench score`: a replay file scored against the snapshot in MEDBENCH_DATA, nothing published."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pipelines.cli import score as score_command
from pipelines.engine.snapshots import current_snapshot, set_current_snapshot
from pipelines.datasets.clinicalqa.demo import write_demo_clinicalqa
from pipelines.datasets.clinicalqa.source import (
    load_clinicalqa_snapshot,
    read_clinicalqa_snapshot,
)
from support.plugins import specs as load_specs
from medbench.layout import DataDir

N = 50


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="medbench")
    score_command.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser


def _run(*argv: str) -> int:
    args = _parser().parse_args(["score", *argv])
    assert args.func is score_command.run
    return args.func(args)


@pytest.fixture()
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    snapshots = DataDir(data).snapshots("clinicalqa")
    write_demo_clinicalqa(tmp_path / "demo.jsonl", n=N)
    spec = load_specs().datasets["clinicalqa"]
    snap = load_clinicalqa_snapshot(spec, N, snapshots, source=str(tmp_path / "demo.jsonl"), log=lambda _: None)
    set_current_snapshot(DataDir(data), "clinicalqa", snap.path)
    monkeypatch.setenv("MEDBENCH_DATA", str(data))
    return data


@pytest.fixture()
def gold(data_dir: Path) -> list[dict]:
    return read_clinicalqa_snapshot(current_snapshot(DataDir(data_dir), "clinicalqa").path)


def _replay(path: Path, gold: list[dict], wrong: int = 5) -> Path:
    """Correct answers except the first ``wrong`` items (one unparsable); ids as numbers on odd rows."""
    lines = []
    for i, row in enumerate(gold):
        letter = row["answer"] if i >= wrong else "ABCDE"[("ABCDE".index(row["answer"]) + 1) % 5]
        output = "잘 모르겠습니다" if i == 0 else f"풀이...\n정답: {letter}"
        iid = row["question_id"] if i % 2 else str(row["question_id"])
        lines.append(json.dumps({"instance_id": iid, "output": output}, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_text_report(tmp_path: Path, gold: list[dict], capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--task", "clinicalqa@0", "--outputs", str(_replay(tmp_path / "out.jsonl", gold))) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("clinicalqa@0 on snapshot ") and ", parser v4, " in lines[0]
    assert any(line.split() == [str(gold[0]["question_id"]), "-", "no_answer", "no"] for line in lines)
    assert any(line.split()[:4] == [str(gold[9]["question_id"]), gold[9]["answer"], "ok", "yes"] for line in lines)
    assert f"n = {N}; parse status: ok {N - 1}, no_answer 1, ambiguous 0, empty 0" in out
    assert any(line.startswith("accuracy ") and "0.9000" in line and "95% CI" in line for line in lines)
    assert any(line.startswith("parse_rate ") and "0.9800" in line for line in lines)


def test_json_report(tmp_path: Path, gold: list[dict], capsys: pytest.CaptureFixture[str]) -> None:
    path = _replay(tmp_path / "out.jsonl", gold)
    assert _run("--task", "clinicalqa", "--outputs", str(path), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["task"] == "clinicalqa@0"
    assert report["parser"] == load_specs().task("clinicalqa@0").settings.parser == "v4"  # the parser that ran
    assert report["metrics"]["accuracy"]["value"] == pytest.approx(45 / N)
    assert report["metrics"]["parse_rate"]["value"] == pytest.approx(49 / N)
    acc = report["metrics"]["accuracy"]
    assert acc["ci_low"] <= acc["value"] <= acc["ci_high"]
    assert any(name.startswith("accuracy[") for name in report["metrics"])
    assert len(report["items"]) == N
    assert report["items"][0] == {
        "instance_id": str(gold[0]["question_id"]),
        "prediction": None,
        "parse_status": "no_answer",
        "correct": False,
    }
    assert report["items"][-1]["correct"] is True
    assert set(report["items"][1]) == {"instance_id", "prediction", "parse_status", "correct"}


def test_bad_line_exits_1_naming_the_line(tmp_path: Path, gold: list[dict], capsys: pytest.CaptureFixture[str]) -> None:
    path = _replay(tmp_path / "out.jsonl", gold)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[6] = '{"instance_id": "x", "output": 3}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _run("--task", "clinicalqa@0", "--outputs", str(path)) == 1
    captured = capsys.readouterr()
    assert "line 7: field `output` must be a string" in captured.err
    assert captured.out == ""


def test_missing_and_unknown_ids_exit_1(tmp_path: Path, gold: list[dict], capsys: pytest.CaptureFixture[str]) -> None:
    path = _replay(tmp_path / "out.jsonl", gold)
    lines = path.read_text(encoding="utf-8").splitlines()[:-2] + ['{"instance_id": 123456789, "output": "A"}']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _run("--task", "clinicalqa@0", "--outputs", str(path), "--json") == 1
    err = capsys.readouterr().err
    assert "1 unknown instance id (e.g. '123456789'" in err
    assert "2 missing instance ids" in err


def test_absent_outputs_file_exits_1(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("--task", "clinicalqa@0", "--outputs", str(tmp_path / "nope.jsonl")) == 1
    assert "cannot read the replay file" in capsys.readouterr().err


def test_no_snapshot_tells_to_materialize(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEDBENCH_DATA", str(tmp_path / "empty"))
    (tmp_path / "out.jsonl").write_text('{"instance_id": 1, "output": "A"}\n')
    assert _run("--task", "clinicalqa@0", "--outputs", str(tmp_path / "out.jsonl")) == 1
    assert "run `medbench materialize --task clinicalqa@0` first" in capsys.readouterr().err


def test_usage_errors_exit_2(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("")
    assert _run("--task", "nosuchtask@0", "--outputs", str(out)) == 2
    assert "unknown task 'nosuchtask@0'" in capsys.readouterr().err
    assert _run("--task", "vitaldb-ioh@0", "--outputs", str(out)) == 2
    assert "scores tasks answered in text (clinicalqa@0); vitaldb-ioh@0 is a score task" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        _parser().parse_args(["score", "--task", "clinicalqa@0"])
    assert info.value.code == 2
