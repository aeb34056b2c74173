"""A replaced replay file makes a new run with the new score, never the old one republished.

The fault: a replay model's outputs file was replaced (correct answers -> all "A");
``medbench score`` on it gave 0.2000, but ``materialize --force`` logged "1045/1045 outputs already
stored; resuming" and published 1.0000, because the generation key and the run id held the file's
path. Here the same path gets new content and ``materialize`` publishes a new run with the new
score, the old run kept as it was.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.commands import run_medbench
from support.paths import REPO
from support.model_specs import replay_spec

from pipelines.datasets.clinicalqa.source import read_clinicalqa_snapshot
from pipelines.engine.snapshots import current_snapshot
from medbench.layout import DataDir

pytestmark = pytest.mark.slow


def _materialize(data: Path, specs: Path, *extra: str) -> tuple[str, float]:
    out = run_medbench("materialize", "--demo", "--task", "clinicalqa@0", "--model", "acme/replayer", *extra,
                       data=data, env={"MEDBENCH_SPECS": str(specs)}).stdout
    match = re.search(r"clinicalqa@0\|acme/replayer\s+(?:ran|reused)\s+([0-9a-f]{12})\s+accuracy ([0-9.]+)", out)
    assert match, out
    return match[1], float(match[2])


def test_replacing_the_file_publishes_a_new_run(demo_data: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(demo_data, data, symlinks=True, ignore=shutil.ignore_patterns("dagster"))
    specs = tmp_path / "specs"
    shutil.copytree(REPO / "specs", specs)
    (specs / "models" / "acme").mkdir()
    (specs / "models" / "acme" / "replayer.toml").write_text(replay_spec("outputs.jsonl"), encoding="utf-8")
    gold = read_clinicalqa_snapshot(current_snapshot(DataDir(data), "clinicalqa").path)
    outputs = specs / "models" / "acme" / "outputs.jsonl"  # relative to the spec file

    def write(answer_of) -> None:
        outputs.write_text("".join(json.dumps({"instance_id": str(r["question_id"]), "output": f"정답: {answer_of(r)}"})
                                   + "\n" for r in gold), encoding="utf-8")

    write(lambda r: r["answer"])
    first, right = _materialize(data, specs)
    assert right == 1.0
    write(lambda r: "A")
    second, all_a = _materialize(data, specs, "--force")
    expected = sum(r["answer"] == "A" for r in gold) / len(gold)
    assert second != first and all_a == pytest.approx(expected, abs=1e-4) and all_a < 1.0
    published = json.loads(DataDir(data).result_path(second).read_text())
    assert published["config"]["backend_settings"]["outputs"] == "outputs.jsonl"
    assert str(tmp_path) not in json.dumps(published["config"])
    assert json.loads(DataDir(data).result_path(first).read_text())["metrics"][0]["value"] == 1.0
