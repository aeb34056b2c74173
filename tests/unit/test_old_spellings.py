"""Plug-ins written before the one spelling still work (docs/concepts.md, "Glossary"): a dataset that
defines only the old ``materialise()`` registers and makes its snapshot, warning once to rename it;
one that defines ``materialize()`` is called without a warning; the old class name ``Materialised``
is ``Materialized`` from every path a plug-in imported it from, warning once.

This file spells the old names on purpose (tests/unit/test_vocabulary.py lists it as exempt). The
old-spelled dataset is the real one of the ``medbench_potassium`` test plug-in; ``medbench_toyhospital``
uses the new spelling."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.paths import REPO

from medbench import old_paths
from medbench.conformance import PluginError
from medbench.layout import DataDir
from medbench.old_spellings import call
from medbench.protocols import Dataset


def materialize(dataset, *args):
    """What the engine does (``pipelines.engine.inputs``): a dataset's snapshot, by either spelling."""
    return call(dataset, Dataset, "materialize", *args)
from medbench.outcomes import Materialized
from medbench.protocols import Dataset
from medbench.registry import Plugins
from medbench.specs import DatasetSpec
from pipelines.engine.spec_decoding import decode_strict

PLUGINS = REPO / "tests" / "plugins"


@pytest.fixture
def fresh_warnings(monkeypatch) -> Iterator[list[warnings.WarningMessage]]:
    """Every warning recorded, with the once-per-process memory of old names emptied for the test."""
    monkeypatch.setattr(old_paths, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def _deprecations(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


def _plugin_dataset(distribution: str, package: str, slug: str, monkeypatch) -> tuple[Dataset, DatasetSpec]:
    monkeypatch.syspath_prepend(str(PLUGINS / distribution))
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, name)
    module = __import__(f"{package}.dataset", fromlist=["dataset"])
    cls = next(v for v in vars(module).values() if isinstance(v, type) and getattr(v, "slug", None) == slug)
    spec = decode_strict(PLUGINS / distribution / package / "specs" / "datasets" / f"{slug}.toml", DatasetSpec)
    return cls(), spec


def _demo(tmp_path: Path) -> DataDir:
    data = DataDir(tmp_path / "data")
    data.claim("demo")
    return data


def test_an_old_plugin_registers_makes_its_snapshot_and_warns_once(tmp_path: Path, monkeypatch) -> None:
    dataset, spec = _plugin_dataset("medbench_potassium", "medbench_potassium", "fhirward", monkeypatch)
    assert "materialise" in vars(type(dataset)) and "materialize" not in vars(type(dataset))
    Plugins.empty().datasets.add(dataset)  # the load-time check accepts the old spelling
    data = _demo(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        monkeypatch.setattr(old_paths, "_warned", set())
        first = materialize(dataset, spec, data, {}, lambda line: None)
        again = materialize(dataset, spec, data, {}, lambda line: None)
    assert isinstance(first, Materialized) and first.rows > 0 and Path(first.path).exists()
    assert again.snapshot_id == first.snapshot_id
    assert _deprecations(caught) == [
        ("medbench_potassium.dataset.FhirWardDataset.materialise() is the old spelling of Dataset.materialize(): "
         'rename it materialize() (docs/adding-a-task.md, "Checked at load")')]


def test_a_plugin_with_the_new_spelling_is_called_without_a_warning(tmp_path: Path, monkeypatch,
                                                                    fresh_warnings) -> None:
    dataset, spec = _plugin_dataset("medbench_toyhospital", "medbench_toyhospital", "toyhospital", monkeypatch)
    assert "materialize" in vars(type(dataset)) and "materialise" not in vars(type(dataset))
    Plugins.empty().datasets.add(dataset)
    made = materialize(dataset, spec, _demo(tmp_path), {}, lambda line: None)
    assert isinstance(made, Materialized) and made.rows > 0
    assert _deprecations(fresh_warnings) == []


class Both(Dataset):
    slug = "both"

    def materialize(self, spec, data, options, log):
        return "new"

    def materialise(self, spec, data, options, log):
        return "old"


class OldTakingTooMuch(Dataset):
    slug = "greedy"

    def materialise(self, spec, data, options, log, extra):
        return None


def test_the_new_spelling_wins_when_both_are_defined(fresh_warnings) -> None:
    assert materialize(Both(), None, None, {}, print) == "new"
    assert _deprecations(fresh_warnings) == []


def test_an_old_method_of_the_wrong_shape_fails_at_registration_naming_it() -> None:
    with pytest.raises(PluginError, match=r"OldTakingTooMuch: method materialise\(\) takes 5-5 positional "
                                          r"arguments; Dataset.materialize is called with 4$"):
        Plugins.empty().datasets.add(OldTakingTooMuch())


def test_the_old_class_name_is_the_new_one_from_every_path_and_warns_once(fresh_warnings) -> None:
    from medbench.outcomes import Materialised as from_core
    from pipelines.core.outcomes import Materialised as from_old_core
    from pipelines.datasets.base import Materialised as from_base

    assert from_core is from_old_core is from_base is Materialized
    assert [m for m in _deprecations(fresh_warnings) if m.startswith("Materialised")] == [
        'Materialised is the old spelling of Materialized: import Materialized instead (docs/concepts.md, "Glossary")']
    with pytest.raises(ImportError):
        from medbench.outcomes import Materialisd  # noqa: F401  (any other name is still missing)
