"""Protocols enforced at load (docs/adding-a-task.md, "Checked at load"): a half-written family,
dataset, backend or kind fails when it is registered or its entry point loaded, in one line naming
the distribution, the class and the member, instead of registering and returning None later."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

from pipelines.core.conformance import PluginError, check_conforms, required_members
from pipelines.core.kind import Kind
from pipelines.core.protocols import Backend, Dataset, TaskFamily
from pipelines.core.registry import Plugins, Registry
from pipelines.kinds import kinds


class Half(TaskFamily):
    name = "half"


class WrongShape(TaskFamily):
    name = "wrong"
    kind = "choice"
    cluster_column = None
    dataset = 3  # not a slug
    settings_key = "x"
    settings_type = dict
    instances_file = "x.parquet"
    predictions_schema = pa.schema([])
    instance_check_names = ()
    prediction_check_names = ()


def test_required_members_come_from_the_protocols() -> None:
    family = required_members(TaskFamily)
    assert family["score"] == ("method", "") and family["name"][0] == "attribute"
    assert "planned_items" not in family and "check_descriptions" not in family  # defaults are not required
    assert set(required_members(Dataset)) == {"slug", "materialise"}
    assert set(required_members(Backend)) == {"name", "settings_type"}
    assert {"compare", "figures", "sql_types", "truth_columns"} <= set(required_members(Kind))


def test_a_half_written_family_fails_at_registration_in_one_line() -> None:
    with pytest.raises(PluginError) as caught:
        Plugins.empty().families.add(Half())
    message = str(caught.value)
    assert message == (f"registered in-process: task family {__name__}.Half lacks the required attribute 'kind' "
                       "(TaskFamily); define it")
    assert "\n" not in message


def test_a_member_of_the_wrong_shape_fails_naming_it() -> None:
    with pytest.raises(PluginError, match=r"WrongShape: attribute 'dataset' must be a string, not int"):
        check_conforms(WrongShape(), TaskFamily, "task family", "registered in-process")


def test_an_installed_half_written_plugin_names_its_distribution(tmp_path: Path, monkeypatch) -> None:
    site = tmp_path / "site"
    (site / "half_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "half_plugin-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: half-plugin\nVersion: 0.1\n")
    (site / "half_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[medbench.families]\nhalf = half_plugin:Half\n")
    (site / "half_plugin.py").write_text(
        "from pipelines.core.protocols import TaskFamily\n\n\nclass Half(TaskFamily):\n    name = 'half'\n"
        "    kind = 'choice'\n    cluster_column = None\n    dataset = 'd'\n    settings_key = 's'\n"
        "    settings_type = dict\n    instances_file = 'i.parquet'\n    predictions_schema = None\n"
        "    instance_check_names = ()\n    prediction_check_names = ()\n")
    monkeypatch.syspath_prepend(str(site))
    families: Registry = Registry("task family", protocol=TaskFamily).load_entry_points("medbench.families")
    with pytest.raises(PluginError) as caught:
        families.get("half")
    assert str(caught.value) == ("distribution half-plugin: task family half_plugin.Half lacks the required method "
                                 "snapshot_options() (TaskFamily); define it")
    sys.modules.pop("half_plugin", None)


def test_every_builtin_conforms() -> None:
    from pipelines.core.registry import installed_plugins

    plugins = installed_plugins()
    for registry in (plugins.families, plugins.datasets, plugins.backends):
        assert registry.values()  # loading checks each
    for k in kinds().values():
        check_conforms(k, Kind, "task kind", "medbench")
