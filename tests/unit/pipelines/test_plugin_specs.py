"""An installed distribution's spec files are found (entry-point group ``medbench.specs``), a spec
file of the same name in two places is an error naming both, and ``unknown task`` says when a family
of that name is installed but has no spec (docs/adding-a-task.md, "Its spec files")."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path

import pytest

from medbench.registry import installed_plugins
from medbench.specs import SpecError
from pipelines.engine.specs import load_specs
from support.paths import REPO


def _root_without_vitaldb(tmp_path: Path) -> Path:
    root = tmp_path / "specs"
    (root / "tasks").mkdir(parents=True)
    shutil.copytree(REPO / "specs" / "datasets", root / "datasets")
    shutil.copytree(REPO / "specs" / "tasks" / "clinicalqa", root / "tasks" / "clinicalqa")
    shutil.copy(REPO / "specs" / "prices.toml", root / "prices.toml")
    return root


def test_a_distributions_spec_folder_joins_the_projects(tmp_path: Path) -> None:
    root = _root_without_vitaldb(tmp_path)
    extra = tmp_path / "dist-specs"
    shutil.copytree(REPO / "specs" / "tasks" / "vitaldb-ioh", extra / "tasks" / "vitaldb-ioh")
    plugins = dataclasses.replace(installed_plugins(), specs=(("medbench-vitaldb-extra", extra),))
    specs = load_specs(root, plugins)
    assert "vitaldb-ioh@0" in specs.tasks and "clinicalqa@0" in specs.tasks


def test_the_same_spec_file_in_two_places_is_an_error_naming_both(tmp_path: Path) -> None:
    root = _root_without_vitaldb(tmp_path)
    extra = tmp_path / "dist-specs"
    shutil.copytree(REPO / "specs" / "datasets", extra / "datasets")
    plugins = dataclasses.replace(installed_plugins(), specs=(("medbench-dup", extra),))
    with pytest.raises(SpecError) as caught:
        load_specs(root, plugins)
    message = str(caught.value)
    assert str(extra / "datasets") in message and str(root / "datasets") in message and "two spec files" in message


def test_unknown_task_says_when_its_family_is_installed(tmp_path: Path) -> None:
    specs = load_specs(_root_without_vitaldb(tmp_path), installed_plugins())
    with pytest.raises(KeyError) as caught:
        specs.task("vitaldb-ioh")
    message = caught.value.args[0]
    assert message.startswith("unknown task 'vitaldb-ioh'; known: clinicalqa@0")
    assert "family 'vitaldb-ioh' is installed (entry point" in message and "medbench.specs" in message
    with pytest.raises(KeyError) as plain:
        specs.task("no-such-family")
    assert "installed" not in plain.value.args[0]


def test_a_spec_entry_point_naming_no_folder_is_one_line_naming_it(tmp_path: Path, monkeypatch) -> None:
    from medbench.registry import spec_folders

    site = tmp_path / "site"
    (site / "bad_specs-0.1.dist-info").mkdir(parents=True)
    (site / "bad_specs-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: bad-specs\nVersion: 0.1\n")
    (site / "bad_specs-0.1.dist-info" / "entry_points.txt").write_text("[medbench.specs]\nbad = bad_specs:specs_dir\n")
    (site / "bad_specs.py").write_text(f"def specs_dir():\n    return {str(tmp_path / 'missing')!r}\n")
    monkeypatch.syspath_prepend(str(site))
    try:
        with pytest.raises(ValueError) as caught:
            spec_folders()
    finally:
        sys.modules.pop("bad_specs", None)
    assert str(caught.value) == (f"entry point medbench.specs:bad (bad_specs:specs_dir) of bad-specs names "
                                 f"{tmp_path / 'missing'}, which is no folder")
