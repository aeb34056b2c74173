"""A replay model's identity is its outputs file's content, not its path (the wrong-result fault).

A replay file replaced under the same path (right answers -> all "A") once kept its run id and its
generation key, so ``materialize --force`` resumed the old stored outputs and republished 1.0000
where ``medbench score`` said 0.2000. These tests replace the file and get a new run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.paths import REPO
from support.model_specs import replay_spec

from pipelines.backends.settings import published
from pipelines.engine.identity import run_id
from pipelines.backends.replay_pin import file_sha256
from pipelines.engine.specs import SpecError, spec_hash
from support.plugins import specs as load_specs


def _specs_dir(tmp_path: Path, outputs: str = "runs/out.jsonl", extra: str = "") -> Path:
    root = tmp_path / "specs"
    shutil.copytree(REPO / "specs", root)
    (root / "models" / "acme").mkdir()
    (root / "models" / "acme" / "replayer.toml").write_text(replay_spec(outputs) + extra, encoding="utf-8")
    return root


def _outputs(path: Path, answer: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"instance_id": str(i), "output": f"정답: {answer}"}) + "\n"
                            for i in range(3)), encoding="utf-8")
    return path


def test_replacing_the_outputs_file_makes_a_new_run(tmp_path: Path) -> None:
    root = _specs_dir(tmp_path)
    out = _outputs(root / "models" / "acme" / "runs" / "out.jsonl", "B")
    before = load_specs(root)
    model, task = before.model("acme/replayer"), before.task("clinicalqa@0")
    assert model.revision == f"sha256:{file_sha256(out)}"
    first = run_id(model, task, "snap")
    assert run_id(load_specs(root).model("acme/replayer"), task, "snap") == first  # same content, same run

    _outputs(out, "A")  # same path, other answers
    after = load_specs(root).model("acme/replayer")
    assert after.revision != model.revision and spec_hash(after) != spec_hash(model)
    assert run_id(after, task, "snap") != first


def test_a_relative_path_is_relative_to_the_spec_file_not_the_current_directory(tmp_path: Path,
                                                                               monkeypatch) -> None:
    root = _specs_dir(tmp_path)
    out = _outputs(root / "models" / "acme" / "runs" / "out.jsonl", "B")
    _outputs(tmp_path / "elsewhere" / "runs" / "out.jsonl", "A")  # a decoy under the current directory
    monkeypatch.chdir(tmp_path / "elsewhere")
    specs = load_specs(root)
    model = specs.model("acme/replayer")
    assert Path(model.settings.resolved) == out.resolve()
    cap = specs.task("clinicalqa@0").choice.max_new_tokens
    generator = specs.backend_of(model).text_generator(model, None, max_new_tokens=cap, options=("A",))
    assert generator.path == out.resolve()


def test_the_local_path_is_neither_hashed_nor_published(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for where in (a, b):  # two checkouts in different folders, the same file content
        root = _specs_dir(where)
        _outputs(root / "models" / "acme" / "runs" / "out.jsonl", "B")
    ma, mb = load_specs(a / "specs").model("acme/replayer"), load_specs(b / "specs").model("acme/replayer")
    assert ma.settings.resolved != mb.settings.resolved
    assert spec_hash(ma) == spec_hash(mb)
    shown = published(ma.settings)
    assert str(tmp_path) not in json.dumps(shown)
    assert shown == {"outputs": "out.jsonl", "outputs_sha256": ma.revision.removeprefix("sha256:"), "demo_only": False}


def test_a_missing_file_gets_no_stale_revision(tmp_path: Path) -> None:
    root = _specs_dir(tmp_path)
    model = load_specs(root).model("acme/replayer")
    assert model.revision == "sha256:unreadable"


def test_a_spec_may_not_set_the_resolved_path(tmp_path: Path) -> None:
    root = _specs_dir(tmp_path, outputs='runs/out.jsonl"\nresolved = "/etc/passwd')
    with pytest.raises(SpecError, match="settings.resolved"):
        load_specs(root)
