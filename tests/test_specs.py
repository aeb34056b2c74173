"""Spec decoding is strict, hashes are stable, and released task versions never change."""

import shutil
from pathlib import Path

import pytest

from pipelines.engine.specs import DEFAULT_SPECS_DIR, SpecError, load_specs, spec_hash

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
