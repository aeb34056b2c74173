"""The per-process specs cache returns the same decoded specs while no file changed, and fresh ones
after any spec file or replay outputs file changed, appeared or disappeared."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipelines.engine.specs import SpecError
from pipelines.engine.specs_cache import cached_specs
from support.plugins import builtin_plugins
from support.model_specs import replay_spec
from support.paths import REPO


@pytest.fixture
def specs_dir(tmp_path: Path) -> Path:
    root = tmp_path / "specs"
    shutil.copytree(REPO / "specs", root)
    return root


def _outputs(path: Path, answer: str) -> None:
    path.write_text(json.dumps({"id": "q1", "output": answer}) + "\n", encoding="utf-8")


def test_unchanged_files_give_the_same_specs_object(specs_dir: Path) -> None:
    first = cached_specs(specs_dir, builtin_plugins())
    assert cached_specs(specs_dir, builtin_plugins()) is first
    assert cached_specs(str(specs_dir), builtin_plugins()) is first  # the same folder however it is named


def test_an_edited_spec_file_is_read_again(specs_dir: Path) -> None:
    first = cached_specs(specs_dir, builtin_plugins())
    path = specs_dir / "models" / "medbench" / "random.toml"
    path.write_text(path.read_text().replace('description = "', 'description = "EDITED '), encoding="utf-8")
    second = cached_specs(specs_dir, builtin_plugins())
    assert second is not first
    assert second.models["medbench/random"].description.startswith("EDITED ")


def test_added_and_removed_model_files_are_seen(specs_dir: Path) -> None:
    assert "acme/replayer" not in cached_specs(specs_dir, builtin_plugins()).models
    (specs_dir / "models" / "acme").mkdir()
    _outputs(specs_dir / "models" / "acme" / "out.jsonl", "A")
    (specs_dir / "models" / "acme" / "replayer.toml").write_text(replay_spec("out.jsonl"), encoding="utf-8")
    assert "acme/replayer" in cached_specs(specs_dir, builtin_plugins()).models
    (specs_dir / "models" / "medbench" / "random.toml").unlink()
    assert "medbench/random" not in cached_specs(specs_dir, builtin_plugins()).models


def test_a_replaced_replay_outputs_file_changes_the_revision(specs_dir: Path) -> None:
    (specs_dir / "models" / "acme").mkdir()
    outputs = specs_dir / "models" / "acme" / "out.jsonl"
    _outputs(outputs, "A")
    (specs_dir / "models" / "acme" / "replayer.toml").write_text(replay_spec("out.jsonl"), encoding="utf-8")
    before = cached_specs(specs_dir, builtin_plugins()).models["acme/replayer"].revision
    replacement = outputs.with_name("new.jsonl")
    _outputs(replacement, "B")
    replacement.replace(outputs)  # same path, same size, new content
    after = cached_specs(specs_dir, builtin_plugins()).models["acme/replayer"].revision
    assert after != before and after.startswith("sha256:")


def test_a_broken_spec_raises_and_is_not_kept(specs_dir: Path) -> None:
    good = cached_specs(specs_dir, builtin_plugins())
    path = specs_dir / "models" / "medbench" / "random.toml"
    text = path.read_text()
    path.write_text(text + "\nnot toml [[[\n", encoding="utf-8")
    with pytest.raises(SpecError):
        cached_specs(specs_dir, builtin_plugins())
    path.write_text(text, encoding="utf-8")
    again = cached_specs(specs_dir, builtin_plugins())
    assert again.models.keys() == good.models.keys()
