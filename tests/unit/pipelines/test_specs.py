"""Spec decoding is strict, hashes are stable, and released task versions never change."""

import shutil
import sys
from pathlib import Path

import pytest

from medbench.canonical import SpecStruct, canonical_json, defaults
from pipelines.engine.specs import DEFAULT_SPECS_DIR, SpecError, model_spec_type, spec_hash, task_spec_type
from support.plugins import builtin_plugins
from support.plugins import specs as load_specs

# Released (preview = false) task versions and their locked spec hashes. A released version
# must never change: a change belongs in a new version file. p0 has no released version yet;
# when one is released, add its hash here (the test below then guards it).
RELEASED_TASK_HASHES: dict[str, str] = {}


@pytest.fixture()
def specs_copy(tmp_path: Path) -> Path:
    root = tmp_path / "specs"
    shutil.copytree(DEFAULT_SPECS_DIR, root)
    return root


def test_repository_specs_load():
    specs = load_specs()
    assert {"clinicalqa@0", "vitaldb-ioh@0"} <= set(specs.tasks)
    assert {"medbench/random", "medbench/neg-last-map"} <= set(specs.models)
    assert specs.datasets["clinicalqa"].doi == "10.23421/2026.0800"
    assert specs.datasets["vitaldb"].doi == "10.1038/s41597-022-01411-5"
    assert str(specs.datasets["clinicalqa"].public_since) == "2025-04-04"


def test_guide_facts_in_specs():
    specs = load_specs()
    cq = specs.datasets["clinicalqa"]
    assert cq.license.startswith("CC BY 4.0")
    assert "ClinicalQA: Korean Medical Knowledge QA Benchmark" in cq.citation
    assert specs.datasets["vitaldb"].citation.startswith("Lee HC, Park Y, Yoon SB, Yang SM, Park D, Jung CW.")
    assert specs.task("clinicalqa").choice.n_items == 1045
    assert specs.task("vitaldb-ioh").ioh.track == "Solar8000/ART_MBP"
    assert all(t.preview for t in specs.tasks.values())


def test_unknown_key_names_file_and_key(specs_copy: Path):
    path = specs_copy / "models" / "medbench" / "random.toml"
    path.write_text(path.read_text().replace('revision = "1"', 'revision = "1"\nrevison = "2"'))
    with pytest.raises(SpecError) as err:
        load_specs(specs_copy)
    assert str(path) in str(err.value) and "`revison`" in str(err.value)


def test_missing_key_names_file_and_key(specs_copy: Path):
    path = specs_copy / "tasks" / "clinicalqa" / "0.toml"
    path.write_text(path.read_text().replace("seed = 20261029\n", "", 1))
    with pytest.raises(SpecError) as err:
        load_specs(specs_copy)
    assert str(path) in str(err.value) and "`bootstrap.seed`" in str(err.value)


def test_nested_unknown_key_is_named_with_its_table(specs_copy: Path):
    path = specs_copy / "tasks" / "vitaldb-ioh" / "0.toml"
    path.write_text(path.read_text().replace("threshold = 65.0", "threshold = 65.0\nthreshhold = 60.0"))
    with pytest.raises(SpecError, match=r"`ioh\.threshhold`"):
        load_specs(specs_copy)


def test_slug_must_match_path(specs_copy: Path):
    path = specs_copy / "models" / "medbench" / "random.toml"
    path.write_text(path.read_text().replace('slug = "medbench/random"', 'slug = "medbench/rand"'))
    with pytest.raises(SpecError, match="random.toml"):
        load_specs(specs_copy)


def test_model_naming_unknown_task_is_an_error(specs_copy: Path):
    path = specs_copy / "models" / "medbench" / "random.toml"
    path.write_text(path.read_text().replace('tasks = ["clinicalqa@0"]', 'tasks = ["clinicalqa@9"]'))
    with pytest.raises(SpecError, match="clinicalqa@9"):
        load_specs(specs_copy)


def test_hash_is_stable_and_sensitive(specs_copy: Path):
    a = load_specs()
    b = load_specs(specs_copy)
    assert a.hashes == b.hashes
    path = specs_copy / "tasks" / "clinicalqa" / "0.toml"
    path.write_text(path.read_text().replace("replicates = 2000", "replicates = 2001"))
    c = load_specs(specs_copy)
    assert c.hashes["task:clinicalqa@0"] != a.hashes["task:clinicalqa@0"]
    assert c.hashes["task:vitaldb-ioh@0"] == a.hashes["task:vitaldb-ioh@0"]


def test_hash_ignores_toml_formatting(specs_copy: Path):
    path = specs_copy / "models" / "medbench" / "random.toml"
    text = path.read_text()
    path.write_text("# a comment\n" + text.replace('name = "Uniform random choice"', 'name   =   "Uniform random choice"'))
    assert spec_hash(load_specs(specs_copy).models["medbench/random"]) == spec_hash(load_specs().models["medbench/random"])


def test_released_versions_are_locked():
    specs = load_specs()
    released = {ref: spec_hash(t) for ref, t in specs.tasks.items() if not t.preview}
    assert released == RELEASED_TASK_HASHES, (
        "a released task version changed or was released without locking its hash: released versions never "
        "change; put the change in a new version file, and lock new releases in RELEASED_TASK_HASHES"
    )


def test_evaluations_come_from_model_task_lists():
    specs = load_specs()
    pairs = {(t.ref, m.slug) for t, m in specs.evaluations()}
    assert ("clinicalqa@0", "medbench/random") in pairs
    assert ("vitaldb-ioh@0", "medbench/neg-last-map") in pairs
    assert ("vitaldb-ioh@0", "medbench/random") not in pairs  # not a cross product
    for task_ref, slug in pairs:
        assert task_ref in specs.models[slug].tasks


def test_task_and_model_resolution():
    specs = load_specs()
    assert specs.task("clinicalqa").ref == "clinicalqa@0"
    assert specs.model("random").slug == "medbench/random"
    with pytest.raises(KeyError):
        specs.task("nope")


# Every default value of every spec Struct (the classes under medbench.canonical.SpecStruct
# defined in a module), as builtins. A field equal to its default is left out of the spec hash, so
# changing a default changes what existing specs mean without changing their hashes (their results
# would silently stand for something else): it must be a deliberate change of this lock, made with
# a new task or model version where results depend on it. Adding an optional field adds a line
# here; choose its default so that existing specs keep their meaning. The per-plug-in subclasses
# (``TaskSpec[<family>]``, ``ModelSpec[<backend>]``) are checked for every registered family and
# backend below, so adding a family breaks no lock.
SPEC_DEFAULTS: dict[str, dict[str, object]] = {
    "PriceSpec": {"key": ""},
    "TaskSpec": {"intervals": {}},
    "IntervalsSpec": {"proportion": "bootstrap-percentile", "prevalence": "two-class-replicates", "cluster": "percentile",
                      "min_clusters": 0, "recalibration": "fixed"},
    "IohSettings": {"fit_seed": "task", "baseline_model": "", "reporting": {}},
    "IohReporting": {"thresholds": [], "alarm_rates": [], "age_bands": [], "calibration_bins": 10},
    "ModelSpec": {"release_date": None, "knowledge_cutoff": None, "training_data": []},
    "PriceTable": {"device_hours": {}, "tokens": {}},
    "LogisticRegressionSettings": {
        "below": [65.0, 70.0, 75.0], "recent_seconds": [30, 60], "slope_seconds": 60, "first_seconds": 60,
        "seed": None, "C": [0.01, 0.1, 1.0, 10.0], "max_iter": 1000,
    },
    "HistGradientBoostingSettings": {
        "below": [65.0, 70.0, 75.0], "recent_seconds": [30, 60], "slope_seconds": 60, "first_seconds": 60,
        "seed": None, "learning_rate": [0.05, 0.1], "max_leaf_nodes": [15, 31], "max_iter": 200,
        "l2_regularization": 0.0,
    },
    "TransformersSettings": {
        "seed": 0, "max_new_tokens": None, "batch_size": 16, "device": "auto", "dtype": "auto", "num_threads": None,
        "chat_template_kwargs": {},
    },
    "ReplaySettings": {"demo_only": False},
    "MatchingJudgeRule": {"demo_only": True},
    "RubricSettings": {"judge_samples": 3, "judge_temperature": 0.0, "judge_max_new_tokens": 1024, "min_judge_kappa": 0.6,
                       "demo_judge": "", "reference_grades": ""},
    "VllmSettings": {"seed": 0, "max_new_tokens": None, "chunk_size": 256, "chat_template_kwargs": {}, "engine": {}},
    "VllmEngine": {
        "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "dtype": None, "max_model_len": None,
        "gpu_memory_utilization": None, "enforce_eager": None, "extra": {},
    },
    "OpenAISettings": {
        "model": None, "endpoint": None, "base_url": None, "base_url_env": None, "api_key_env": None, "max_new_tokens": None,
        "concurrency": 8, "timeout_s": 120.0, "max_retries": 6, "checkpoint_every": 32, "extra_body": {},
    },
}


PROJECT_PACKAGES = {"medbench", "pipelines", "api", "warehouse"}


def _spec_structs() -> list[type]:
    load_specs()  # imports every module that defines spec Structs
    found, todo = [], [SpecStruct]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        module = sys.modules.get(cls.__module__)
        if (cls is not SpecStruct and not cls.__name__.startswith("_") and "[" not in cls.__name__
                and getattr(module, cls.__name__, None) is cls
                and cls.__module__.split(".")[0] in PROJECT_PACKAGES):  # an installed plug-in locks its own
            found.append(cls)
    return found


@pytest.mark.parametrize("name", builtin_plugins().families.names())
def test_each_family_task_spec_adds_no_default(name: str):
    """``TaskSpec[<family>]`` has the common defaults only (its settings table is required)."""
    assert defaults(task_spec_type(builtin_plugins().families.get(name))) == SPEC_DEFAULTS["TaskSpec"]


@pytest.mark.parametrize("name", builtin_plugins().backends.names())
def test_each_backend_model_spec_adds_only_its_settings_default(name: str):
    """``ModelSpec[<backend>]``: the common defaults, plus the settings table's own where all its keys have one."""
    backend = builtin_plugins().backends.get(name)
    got = defaults(model_spec_type(name, backend.settings_type))
    got.pop("settings", None)  # the settings' own defaults are locked under their Struct's name above
    assert got == SPEC_DEFAULTS["ModelSpec"]


def test_default_values_are_locked():
    actual = {cls.__name__: defaults(cls) for cls in _spec_structs() if defaults(cls)}
    assert actual == SPEC_DEFAULTS, (
        "a spec Struct's default values changed: defaults are left out of spec hashes, so a changed default "
        "changes what existing specs mean without changing their hashes; if deliberate, update SPEC_DEFAULTS"
    )


def test_hash_omits_defaults_so_a_new_optional_field_does_not_rekey(specs_copy: Path):
    before = load_specs().hashes
    path = specs_copy / "models" / "medbench" / "tiny-llama.toml"
    path.write_text(path.read_text().replace("batch_size = 32", 'batch_size = 32\ndevice = "auto"\ndtype = "auto"'))
    path = specs_copy / "models" / "medbench" / "random.toml"
    path.write_text(path.read_text().replace('basis = "free"', 'basis = "free"\nkey = ""'))
    assert load_specs(specs_copy).hashes == before  # a default written out is the same spec

    class Old(SpecStruct):
        a: int

    class New(SpecStruct):
        a: int
        b: tuple[float, ...] = (65.0, 70.0)
        c: int = 20261029

    assert canonical_json(Old(a=1)) == canonical_json(New(a=1)) == canonical_json(New(a=1, b=(65.0, 70.0)))
    assert canonical_json(New(a=1, c=7)) == b'{"a":1,"c":7}'


def test_a_task_kind_is_any_known_kind_and_an_unknown_one_is_named(specs_copy: Path):
    """``kind`` is checked against the kinds (``medbench.kinds``), not a closed list in the spec
    type, so a kind added as one module needs no edit here; an unknown one lists the known."""
    path = specs_copy / "tasks" / "clinicalqa" / "0.toml"
    path.write_text(path.read_text().replace('kind = "choice"', 'kind = "ranking"'))
    with pytest.raises(SpecError, match=r"key `kind`: unknown .*'ranking'.*choice, rubric, score"):
        load_specs(specs_copy)
