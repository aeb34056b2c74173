"""Plug-in code in the identity (docs/adding-a-task.md, "Plug-in code in the identity"): a result's
``versions.plugins`` names each distribution other than medbench whose classes it used, with a hash
of its files as they are on disk, found for a wheel-style install and for an editable install
whose ``RECORD`` lists only a ``.pth`` path (hatchling's, uv's), and the run id takes the list only
when it is non-empty."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.engine import plugin_identity
from pipelines.engine.identity import run_id
from pipelines.engine.plugin_identity import plugin_versions

FAMILY = "class Family:\n    name = 'acme-task'\n"


def _dist_info(site: Path, *, top_level: bool, record: str) -> None:
    info = site / "acme_plugin-1.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-plugin\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text("[medbench.families]\nacme-task = acme_plugin.family:Family\n")
    (info / "RECORD").write_text(record)
    if top_level:
        (info / "top_level.txt").write_text("acme_plugin\n")


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    plugin_identity._distributions.cache_clear()
    yield
    for name in [m for m in sys.modules if m == "acme_plugin" or m.startswith("acme_plugin.")]:
        del sys.modules[name]
    plugin_identity._distributions.cache_clear()


def _load():
    for name in [m for m in sys.modules if m == "acme_plugin" or m.startswith("acme_plugin.")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    return importlib.import_module("acme_plugin.family").Family()


def _package(root: Path) -> Path:
    package = root / "acme_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "family.py").write_text(FAMILY)
    return package


def test_an_installed_distribution_is_recorded_and_an_edit_changes_its_hash(tmp_path: Path, monkeypatch, fresh) -> None:
    site = tmp_path / "site"
    package = _package(site)
    _dist_info(site, top_level=True, record="acme_plugin/__init__.py,,\nacme_plugin/family.py,,\n")
    monkeypatch.syspath_prepend(str(site))
    (first,) = plugin_versions([_load()])
    assert first["name"] == "acme-plugin" and first["version"] == "1.2" and len(first["files_sha256"]) == 64
    (package / "family.py").write_text(FAMILY + "# one line more\n")
    (second,) = plugin_versions([_load()])
    assert second["files_sha256"] != first["files_sha256"]


def test_an_editable_install_by_a_pth_path_is_recorded_from_its_source_files(tmp_path: Path, monkeypatch,
                                                                             fresh) -> None:
    """Its RECORD lists only the ``.pth`` and there is no ``top_level.txt``: without the entry points'
    packages it would record nothing, and an edit would re-serve the old results."""
    site, source = tmp_path / "site", tmp_path / "src"
    package = _package(source)
    _dist_info(site, top_level=False, record="_acme_plugin.pth,,\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(source))  # what the .pth line does in a site folder
    (first,) = plugin_versions([_load()])
    assert first["name"] == "acme-plugin" and first["version"] == "1.2"
    (package / "family.py").write_text(FAMILY.replace("acme-task", "acme-task'  # edited"))
    (second,) = plugin_versions([_load()])
    assert second["files_sha256"] != first["files_sha256"]


def test_builtin_classes_record_nothing_and_leave_the_run_id_as_it_was(monkeypatch) -> None:
    from medbench.registry import installed_plugins
    from medbench.kinds import kinds

    plugins = installed_plugins()
    assert plugin_versions([*plugins.families.values(), *plugins.datasets.values(), *plugins.backends.values(),
                            *kinds().values()]) == []

    class Spec:
        slug, revision, ref = "m", "r", "t@0"

    monkeypatch.setattr("pipelines.engine.identity.spec_hash", lambda spec: "h")
    assert run_id(Spec(), Spec(), "snap") == run_id(Spec(), Spec(), "snap", plugins=())
    plugin = [{"name": "acme-plugin", "version": "1.2", "files_sha256": "0" * 64}]
    assert run_id(Spec(), Spec(), "snap", plugins=plugin) != run_id(Spec(), Spec(), "snap")
