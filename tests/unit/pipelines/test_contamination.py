"""Contamination has a status and a basis: a declaration, the model's own cutoff, its release date.

Each status with its basis; a training-data declaration wins over any date; a base model's cutoff
never decides (MedGemma's spec carries none: its base Gemma 3 states August 2024, its medical
fine-tuning came later, so its release date decides); ``training_data`` left empty keeps every spec
hash (and run id); results written before statuses still decode and are served with a status.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import msgspec
import pytest
from litestar.testing import TestClient
from support.api_data import RUN_IDS, RUNS, catalog, publish_fixture

from api.app import create_app
from pipelines.engine.evaluate import contamination, contamination_basis, contamination_verdict, declares
from pipelines.backends.registry import VllmBackend
from pipelines.engine.specs import canonical_json, model_spec_type, spec_hash
from support.plugins import specs as load_specs
from medbench.layout import DataDir
from medbench.records import CONTAMINATION_FLAG, contamination_of, decode_record, encode_record

SPECS = load_specs()
CQA = SPECS.datasets["clinicalqa"]  # public since 2025-04-04
MEDGEMMA = SPECS.models["google/medgemma-27b-text-it"]
PUBLIC = "clinicalqa went public (2025-04-04)"


def _model(**changes):
    return msgspec.structs.replace(MEDGEMMA, **{"release_date": None, "knowledge_cutoff": None, **changes})


@pytest.mark.parametrize("changes,status,basis", [
    ({"knowledge_cutoff": dt.date(2025, 4, 4)}, "possible", f"knowledge cutoff 2025-04-04 is on or after {PUBLIC}"),
    ({"knowledge_cutoff": dt.date(2024, 8, 1), "release_date": dt.date(2025, 5, 20)}, "unlikely",
     f"knowledge cutoff 2024-08-01 is before {PUBLIC}"),
    ({"release_date": dt.date(2025, 5, 20)}, "possible",
     f"no knowledge cutoff is stated; released 2025-05-20, on or after {PUBLIC}"),
    ({"release_date": dt.date(2025, 4, 3)}, "unlikely", f"no knowledge cutoff is stated; released 2025-04-03, before {PUBLIC}"),
    ({}, "unknown", "no training data declared, and no knowledge cutoff or release date is known for the model"),
    ({"training_data": ["snuh/ClinicalQA"], "knowledge_cutoff": dt.date(2020, 1, 1)}, "declared",
     "the model's authors declare training on clinicalqa (training_data: 'snuh/ClinicalQA')"),
])
def test_each_status_and_its_basis(changes: dict, status: str, basis: str) -> None:
    model = _model(**changes)
    assert contamination_verdict(model, CQA) == (status, basis)
    assert contamination_basis(model, CQA) == basis
    assert contamination(model, CQA) is CONTAMINATION_FLAG[status]
    assert CONTAMINATION_FLAG == {"declared": True, "possible": True, "unlikely": False, "unknown": None}


@pytest.mark.parametrize("entry", ["clinicalqa", "ClinicalQA", "10.23421/2026.0800", "https://doi.org/10.23421/2026.0800",
                                   "snuh/clinicalqa", " CLINICALQA "])
def test_a_declaration_matches_by_slug_doi_name_or_source_and_wins_over_dates(entry: str) -> None:
    model = _model(training_data=["MedQA", entry], knowledge_cutoff=dt.date(2020, 1, 1), release_date=dt.date(2020, 2, 1))
    assert declares(model, CQA) == entry
    assert contamination_verdict(model, CQA)[0] == "declared"


def test_other_declared_datasets_do_not_decide() -> None:
    model = _model(training_data=["MedQA", "PubMedQA", "clinicalqa-v2"], release_date=dt.date(2025, 1, 1))
    assert declares(model, CQA) is None and contamination_verdict(model, CQA)[0] == "unlikely"


def test_a_base_model_cutoff_never_decides_medgemma() -> None:
    """MedGemma states no cutoff of its own; Gemma 3's (August 2024) is not in its spec, so its
    release date (after the data went public) decides: possible, by the release date."""
    assert MEDGEMMA.knowledge_cutoff is None
    status, basis = contamination_verdict(MEDGEMMA, CQA)
    assert status == "possible" and basis.startswith("no knowledge cutoff is stated; released 2025-05-20")
    assert "2024-08" not in basis
    # had the base model's cutoff been put there, it would have said "unlikely": the wrong answer
    assert contamination_verdict(_model(knowledge_cutoff=dt.date(2024, 8, 1)), CQA)[0] == "unlikely"


def test_empty_training_data_keeps_every_spec_hash() -> None:
    for model in SPECS.models.values():
        assert model.training_data == []
        assert b"training_data" not in canonical_json(model)
        assert spec_hash(msgspec.structs.replace(model, training_data=["x"])) != spec_hash(model)
    locked = {  # the hashes before training_data existed (so run ids are unchanged)
        "google/medgemma-27b-text-it": "ce00276830b6130fb145d7a4af79408af3f7d1b8aebeda2d74f7abfbd6ada38a",
        "medbench/random": "2afa46100e1ea1081ed0f6b341d3174d53eb64e65d20382595af85aebbaf6c28",
        "medbench/neg-last-map": "e78a273dfc2e644afac81e2e98a147f6bca669ba003d646914ff1ec90550afff",
    }
    assert {slug: spec_hash(SPECS.models[slug]) for slug in locked} == locked


def test_a_spec_file_declares_training_data() -> None:
    text = (Path(__file__).parents[3] / "specs/models/google/medgemma-27b-text-it.toml").read_text()
    spec = msgspec.toml.decode(text.replace('tasks = ["clinicalqa@0"]', 'tasks = ["clinicalqa@0"]\n'
                                            'training_data = ["MedQA", "snuh/ClinicalQA"]'), type=model_spec_type("vllm", VllmBackend.settings_type))
    assert spec.training_data == ["MedQA", "snuh/ClinicalQA"]
    assert contamination_verdict(spec, CQA)[0] == "declared"


def _old(record_json: bytes, basis: str | None) -> bytes:
    """A result.json as written before statuses: no contamination_status, a date name as basis."""
    body = msgspec.json.decode(record_json)
    body.pop("contamination_status", None)
    body.pop("contamination_basis", None)
    if basis is not None:
        body["contamination_basis"] = basis
    return msgspec.json.encode(body)


def test_old_records_decode_with_a_status_derived_from_the_flag(tmp_path: Path) -> None:
    record = catalog(DataDir(tmp_path / "other")).results[0]
    model = msgspec.structs.replace(record.model, knowledge_cutoff=dt.date(2025, 6, 1), release_date=dt.date(2025, 5, 1))
    base = encode_record(msgspec.structs.replace(record, model=model))
    cases = [(True, "knowledge_cutoff", "possible", "knowledge cutoff 2025-06-01 is on or after clinicalqa went public"),
             (False, "release_date", "unlikely", "release date 2025-05-01 is before clinicalqa went public"),
             (None, None, "unknown", "no knowledge cutoff or release date is known for the model")]
    for flag, basis, status, words in cases:
        r = decode_record(_old(encode_record(msgspec.structs.replace(decode_record(base), contamination=flag)), basis))
        assert r.contamination_status is None
        assert contamination_of(r) == (status, words)


def test_old_records_are_served_with_a_status_and_a_basis(tmp_path: Path) -> None:
    """The shared fixture's records hold only the flag, as results written before statuses do."""
    publish_fixture(tmp_path / "data")
    with TestClient(create_app(tmp_path / "data")) as client:
        for label, spec in RUNS.items():
            flag = spec[-1]
            body = client.get(f"/v1/results/{RUN_IDS[label]}").json()
            assert body["contamination"] is flag
            assert body["contamination_status"] == {True: "possible", False: "unlikely", None: "unknown"}[flag]
            assert isinstance(body["contamination_basis"], str) and body["contamination_basis"]
        rows = client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"]
        assert [CONTAMINATION_FLAG[r["contamination_status"]] for r in rows] == [r["contamination"] for r in rows]
        listed = client.get("/v1/results?task=clinicalqa@0").json()["results"]
        assert all("contamination_status" in r and "contamination_basis" in r for r in listed)
