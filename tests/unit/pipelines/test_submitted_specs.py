"""An approved submission's spec file: written into the data directory's submitted-specs folder, read
back by the strict spec decoder with the hash it was accepted with, loaded with the checkout's specs;
a stored submission that was tampered with (a URL, an unknown setting, another hash) is refused and no
file is left."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from medbench.registry import installed_plugins
from medbench.specs import SpecError, spec_hash
from pipelines.engine.specs import load_specs
from pipelines.engine.submission_check import SubmissionChecker
from pipelines.engine.submission_policy import Endpoint, SubmissionPolicy
from pipelines.engine.submitted_specs import write_submitted_spec
from medbench.layout import DATA_ENV, DataDir
from medbench.submissions import Submission, SubmissionStore

PLUGINS = installed_plugins()
POLICY = SubmissionPolicy(endpoints={"demo-sim": Endpoint(base_url="http://127.0.0.1:9/v1")})
MODEL = {"slug": "acme/sim", "name": "Acme \"sim\" ü", "type": "llm", "provider_model_id": "acme-sim",
         "revision": "2026-12", "release_date": "2026-11-30", "backend": "openai",
         "settings": {"endpoint": "demo-sim", "model": "english"}}


@pytest.fixture
def approved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Submission, DataDir]:
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "data"))
    data = DataDir()
    store = SubmissionStore.for_data(data)
    checked = SubmissionChecker(load_specs(None, PLUGINS), store, lambda: POLICY)(
        {"model": MODEL, "tasks": ["clinicalqa@0"]}, "acme")
    made = store.create(owner="acme", model=checked.model, tasks=checked.tasks, tier="baseline",
                        model_spec_hash=checked.model_spec_hash, quota=None)
    return store.transition(made.submission.id, "queued", "approved: ok"), data


def test_the_written_spec_decodes_strictly_with_the_accepted_hash_and_loads(approved) -> None:
    sub, data = approved
    path = write_submitted_spec(sub, data, PLUGINS)
    assert path == data.submitted_specs / "models" / "acme" / "sim.toml"
    specs = load_specs(None, PLUGINS)
    model = specs.models["acme/sim"]
    assert spec_hash(model) == sub.model_spec_hash and model.settings.endpoint == "demo-sim"
    assert model.name == MODEL["name"] and str(model.release_date) == "2026-11-30"
    assert ("clinicalqa@0", "acme/sim") in {(t.ref, m.slug) for t, m in specs.evaluations()}


@pytest.mark.parametrize("tamper, problem", [
    (lambda m: {**m, "settings": {**m["settings"], "base_url": "http://evil.example/v1"}}, "remove settings.base_url"),
    (lambda m: {**m, "settings": {**m["settings"], "model": "http://evil.example/m"}}, "URLs are refused"),
    (lambda m: {**m, "settings": {**m["settings"], "timeout_s": 5.0}}, "not a submitter's setting"),
    (lambda m: {**m, "backend": "replay", "settings": {"outputs": "x.jsonl"}}, "not accepted from a submission"),
    (lambda m: {**m, "description": "changed after acceptance"}, "stored submission was changed"),
])
def test_a_tampered_submission_is_refused_and_leaves_no_file(approved, tamper, problem) -> None:
    sub, data = approved
    bad = msgspec.structs.replace(sub, model=tamper(dict(sub.model)))
    with pytest.raises(SpecError, match=problem):
        write_submitted_spec(bad, data, PLUGINS)
    folder = data.submitted_specs / "models" / "acme"
    assert not folder.exists() or not any(folder.iterdir())
