"""Protocols enforced at load (docs/adding-a-task.md, "Checked at load"): a half-written family,
dataset, backend or kind fails when it is registered or its entry point loaded, in one line naming
the distribution, the class and the member, instead of registering and returning None later."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

from medbench.conformance import PluginError, check_conforms, required_members
from medbench.kind import Kind
from medbench.protocols import Backend, Dataset, TaskFamily
from medbench.registry import Plugins, Registry
from medbench.kinds import kinds


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
    assert set(required_members(Dataset)) == {"slug", "materialize"}
    assert set(required_members(Backend)) == {"name", "settings_type", "published"}
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
        "from medbench.protocols import TaskFamily\n\n\nclass Half(TaskFamily):\n    name = 'half'\n"
        "    kind = 'choice'\n    cluster_column = None\n    dataset = 'd'\n    settings_key = 's'\n"
        "    settings_type = dict\n    instances_file = 'i.parquet'\n    predictions_schema = __import__('pyarrow').schema([])\n"
        "    instance_check_names = ()\n    prediction_check_names = ()\n")
    monkeypatch.syspath_prepend(str(site))
    families: Registry = Registry("task family", protocol=TaskFamily).load_entry_points("medbench.families")
    with pytest.raises(PluginError) as caught:
        families.get("half")
    assert str(caught.value) == ("distribution half-plugin: task family half_plugin.Half lacks the required method "
                                 "snapshot_options() (TaskFamily); define it")
    sys.modules.pop("half_plugin", None)


def test_every_builtin_conforms() -> None:
    from medbench.registry import installed_plugins

    plugins = installed_plugins()
    for registry in (plugins.families, plugins.datasets, plugins.backends):
        assert registry.values()  # loading checks each
    for k in kinds().values():
        check_conforms(k, Kind, "task kind", "medbench")


# --------------------------------------------------------------------------- each of the four plug-in types


class HalfDataset(Dataset):
    slug = "half-data"


class SlugNotString(Dataset):
    slug = 7

    def materialize(self, spec, data, options, log):
        return None


class HalfBackend(Backend):  # answers windows but never says what a result publishes of its settings
    name = "half-backend"
    settings_type = dict

    def window_scorer(self, model, step_seconds):
        return None


class BackendTakingTooMuch(Backend):
    name = "greedy"
    settings_type = dict

    def published(self, settings, extra, *, keep_defaults=True):
        return {}


def _kind(**members) -> type:
    """A kind with every required member of the built-in ``choice`` kind, then ``members`` over them."""
    from medbench.kinds.choice import Choice

    body = {name: getattr(Choice, name) for name in required_members(Kind)}
    return type("PluginKind", (Kind,), {**body, "name": "plugin-kind", **members})


@pytest.mark.parametrize(("registry", "obj", "line"), [
    (lambda: Plugins.empty().datasets, HalfDataset(),
     f"dataset {__name__}.HalfDataset lacks the required method materialize() (Dataset)"),
    (lambda: Plugins.empty().datasets, SlugNotString(),
     f"dataset {__name__}.SlugNotString: attribute 'slug' must be a string, not int (Dataset: ClassVar[str])"),
    (lambda: Plugins.empty().backends, HalfBackend(),
     f"backend {__name__}.HalfBackend lacks the required method published() (Backend)"),
    (lambda: Plugins.empty().backends, BackendTakingTooMuch(),
     f"backend {__name__}.BackendTakingTooMuch: method published() takes 2-2 positional arguments; "
     "Backend.published is called with 1"),
], ids=["dataset-half", "dataset-shape", "backend-half", "backend-shape"])
def test_a_half_written_dataset_or_backend_fails_at_registration(registry, obj, line) -> None:
    with pytest.raises(PluginError) as caught:
        registry().add(obj)
    assert str(caught.value).startswith(f"registered in-process: {line}") and "\n" not in str(caught.value)


def test_a_half_written_kind_fails_at_registration() -> None:
    whole = _kind()
    Registry("task kind", protocol=Kind).add(whole())  # every member: registers
    half = _kind(figures=Kind.figures)  # the protocol's stub still in place
    with pytest.raises(PluginError, match=r"^registered in-process: task kind [\w.]+PluginKind lacks the required "
                                          r"method figures\(\) \(Kind\); define it$"):
        Registry("task kind", protocol=Kind).add(half())
    shaped = _kind(paired_columns="prediction")  # a string where a tuple is required
    with pytest.raises(PluginError, match=r"attribute 'paired_columns' must be a tuple, not str"):
        Registry("task kind", protocol=Kind).add(shaped())
    for members, problem in (({"sql_types": ["DOUBLE"]}, "'sql_types' must be a mapping, not list"),
                             ({"schema": {"observed": "double"}}, "'schema' must be a pyarrow Schema, not dict"),
                             ({"parses_replies": "yes"}, "'parses_replies' must be True or False, not str")):
        with pytest.raises(PluginError, match=f"attribute {problem} "):
            Registry("task kind", protocol=Kind).add(_kind(**members)())


def test_a_family_schema_that_is_no_pyarrow_schema_fails_at_registration() -> None:
    class DictSchema(WrongShape):
        dataset = "d"
        predictions_schema = {"prediction": "string"}

    with pytest.raises(PluginError, match=r"DictSchema: attribute 'predictions_schema' must be a pyarrow Schema, "
                                          r"not dict \(TaskFamily: ClassVar\[pa.Schema\]\)$"):
        Plugins.empty().families.add(DictSchema())


def _site(tmp_path: Path, group: str, target: str, module: str, code: str) -> Path:
    site = tmp_path / "site"
    (site / "half_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "half_plugin-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: half-plugin\nVersion: 0.1\n")
    (site / "half_plugin-0.1.dist-info" / "entry_points.txt").write_text(f"[{group}]\n{target}\n")
    (site / f"{module}.py").write_text(code)
    return site


@pytest.mark.parametrize(("group", "protocol", "what", "code", "line"), [
    ("medbench.datasets", Dataset, "dataset",
     "from medbench.protocols import Dataset\n\nclass Half(Dataset):\n    slug = 'half'\n",
     "lacks the required method materialize() (Dataset); define it"),
    ("medbench.backends", Backend, "backend",
     "from medbench.protocols import Backend\n\nclass Half(Backend):\n    settings_type = dict\n",
     "lacks the required attribute 'name' (Backend); define it"),
    ("medbench.kinds", Kind, "task kind",
     "from medbench.kind import Kind\n\nclass Half(Kind):\n    name = 'half'\n",
     "lacks the required attribute 'schema' (Kind); define it"),
], ids=["dataset", "backend", "kind"])
def test_each_installed_half_written_plugin_names_its_distribution(tmp_path: Path, monkeypatch, group, protocol,
                                                                   what, code, line) -> None:
    module = f"half_{what.replace(' ', '_')}"
    monkeypatch.syspath_prepend(str(_site(tmp_path, group, f"half = {module}:Half", module, code)))
    from operator import attrgetter

    registry: Registry = Registry(what, attrgetter("slug" if protocol is Dataset else "name"), protocol)
    registry.load_entry_points(group)
    try:
        with pytest.raises(PluginError) as caught:
            registry.get("half")
    finally:
        sys.modules.pop(module, None)
    assert str(caught.value) == f"distribution half-plugin: {what} {module}.Half {line}"


def test_the_command_prints_the_one_line_and_exits_2(tmp_path: Path) -> None:
    """An installed half-written family with its spec: ``medbench materialize`` stops before running
    anything, with the line and no traceback, as for any error in what the user handed it."""
    import os
    import subprocess

    from support.paths import REPO

    code = ("from pathlib import Path\nfrom medbench.protocols import TaskFamily\n\n\n"
            "def specs_dir():\n    return Path(__file__).parent / 'half_specs'\n\n\n"
            "class Half(TaskFamily):\n    name = 'half'\n")
    site = _site(tmp_path, "medbench.families", "half = half_family:Half\n[medbench.specs]\nhalf = half_family:specs_dir",
                 "half_family", code)
    (site / "half_specs" / "tasks" / "half").mkdir(parents=True)
    spec = (REPO / "specs" / "tasks" / "clinicalqa" / "0.toml").read_text()
    (site / "half_specs" / "tasks" / "half" / "0.toml").write_text(
        spec.replace('slug = "clinicalqa"', 'slug = "half"', 1).replace('family = "clinicalqa"', 'family = "half"', 1))
    env = {k: v for k, v in os.environ.items() if k != "MEDBENCH_SPECS"}
    env |= {"PYTHONPATH": os.pathsep.join([str(site), str(REPO)]), "MEDBENCH_DATA": str(tmp_path / "data")}
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "materialize", "--demo", "--task", "half"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == ("medbench: distribution half-plugin: task family half_family.Half lacks the "
                                   "required attribute 'kind' (TaskFamily); define it")
    assert not (tmp_path / "data" / "results").exists()


def test_an_entry_point_that_cannot_be_loaded_is_one_line_naming_it(tmp_path: Path, monkeypatch) -> None:
    """A misspelt class in ``entry_points.txt``: the line names the distribution and the target,
    instead of an AttributeError reported as medbench's own error."""
    code = "from medbench.protocols import Dataset\n\nclass Whole(Dataset):\n    slug = 'half'\n"
    monkeypatch.syspath_prepend(str(_site(tmp_path, "medbench.datasets", "half = half_misspelt:Wohle",
                                          "half_misspelt", code)))
    from operator import attrgetter

    registry: Registry = Registry("dataset", attrgetter("slug"), Dataset).load_entry_points("medbench.datasets")
    try:
        with pytest.raises(PluginError) as caught:
            registry.get("half")
    finally:
        sys.modules.pop("half_misspelt", None)
    assert str(caught.value).startswith("distribution half-plugin: dataset entry point 'half' (half_misspelt:Wohle) "
                                        "cannot be loaded: AttributeError: ")
    assert "\n" not in str(caught.value)
