"""Run ids are exactly the formula of docs/concepts.md, "Run ids", stable, and sensitive to every input."""

import hashlib
import json

import msgspec

from pipelines.engine.identity import code_revision, library_versions, run_id
from pipelines.engine.specs import spec_builtins, spec_hash
from support.plugins import specs as load_specs


def test_run_id_formula():
    specs = load_specs()
    task, model = specs.task("clinicalqa@0"), specs.model("medbench/random")
    fields = {"model": model.slug, "model_revision": model.revision, "model_spec_hash": spec_hash(model),
              "task": "clinicalqa@0", "task_spec_hash": spec_hash(task), "dataset_snapshot": "abc"}
    expected = hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]
    assert run_id(model, task, "abc") == expected
    assert len(expected) == 12 and int(expected, 16) >= 0


def test_spec_hash_is_sha256_of_sorted_canonical_json_without_defaults():
    specs = load_specs()
    for spec in (specs.task("vitaldb-ioh@0"), specs.model("medbench/tiny-llama")):
        builtins = spec_builtins(spec)
        canonical = json.dumps(builtins, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert spec_hash(spec) == hashlib.sha256(canonical.encode()).hexdigest()
    assert "choice" not in spec_builtins(specs.task("vitaldb-ioh@0"))  # None, its default
    assert "device" not in spec_builtins(specs.model("medbench/tiny-llama"))["settings"]  # "auto", its default


def test_run_id_changes_with_snapshot_and_model():
    specs = load_specs()
    task = specs.task("clinicalqa@0")
    m = specs.model("medbench/random")
    assert run_id(m, task, "a") != run_id(m, task, "b")
    m2 = msgspec.structs.replace(m, revision="2")
    assert run_id(m, task, "a") != run_id(m2, task, "a")


def test_versions_recorded():
    assert code_revision()  # a commit (maybe +dirty) or "unknown" outside git
    libs = library_versions()
    assert "numpy" in libs and "duckdb" in libs
